#!/usr/bin/env bash
# Installs the Debian packages arenarpc needs, only those missing
# (idempotent). Runs apt-get as root, through sudo if needed.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libprotobuf-dev protobuf-compiler libgrpc++-dev protobuf-compiler-grpc
  libgtest-dev libgmock-dev libbenchmark-dev libabsl-dev
  libgoogle-perftools-dev libjemalloc-dev libmimalloc-dev
  libtbb-dev libboost-dev
  python3 python3-matplotlib
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing: ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
