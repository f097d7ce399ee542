#!/usr/bin/env bash
# Installs the Debian packages arenarpc needs, only those missing
# (idempotent). Runs apt-get as root, through sudo if needed.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libprotobuf-dev protobuf-compiler libgrpc++-dev protobuf-compiler-grpc
  libprotoc-dev
  libgtest-dev libgmock-dev libbenchmark-dev libabsl-dev
  libgoogle-perftools-dev libjemalloc-dev libmimalloc-dev
  libtbb-dev libboost-dev
  python3 python3-matplotlib
)

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# ghz, the independent gRPC load generator of the RPC benchmark (a Go
# module; needs the Go toolchain, which Debian's golang-go provides).
ghz_version=v0.121.0
gobin="$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin"
# go install builds report version "dev": a marker file records the version.
if ! [ -x "$gobin/ghz" ] || [ "$(cat "$gobin/.ghz-version" 2>/dev/null)" != "$ghz_version" ]; then
  if ! command -v go >/dev/null 2>&1; then
    "${sudo_cmd[@]}" apt-get update -qq
    "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends golang-go
  fi
  echo "installing ghz $ghz_version into $gobin"
  go install "github.com/bojand/ghz/cmd/ghz@$ghz_version"
  echo "$ghz_version" > "$gobin/.ghz-version"
fi
