#!/usr/bin/env bash
# Installs the Debian packages arenarpc needs, only those missing
# (idempotent). Runs apt-get as root, through sudo if needed.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ccache
  libprotobuf-dev protobuf-compiler libgrpc++-dev protobuf-compiler-grpc
  libprotoc-dev
  libgtest-dev libgmock-dev libbenchmark-dev libabsl-dev
  libgoogle-perftools-dev libjemalloc-dev libmimalloc-dev
  libtbb-dev libboost-dev
  python3 python3-matplotlib
  python3-pip  # the modern-protobuf leg fetches its sources with pip download
  # the fuzz leg (libFuzzer, ASan, UBSan) and the tsa leg (-Wthread-safety)
  clang-14 libclang-rt-14-dev
  clang-format-14 clang-format  # the format leg (scripts/format.sh)
)

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi

# apt-get install those of the given packages that are not installed yet.
apt_install_missing() {
  local p missing=()
  for p in "$@"; do
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
}
apt_install_missing "${packages[@]}"

# ghz, the independent gRPC load generator of the RPC benchmark (a Go
# module, built with go install).
ghz_version=v0.121.0
# ghz v0.121.0's go.mod says "go 1.23.0". Debian 12's golang-go is Go 1.19,
# which cannot build it nor fetch a newer toolchain (GOTOOLCHAIN is Go 1.21+),
# so without a new enough go we fetch Go $go_dl_version (the last 1.23 patch)
# from the Go module proxy, which serves toolchains as the module
# golang.org/toolchain (bookworm has no newer golang-go outside backports).
go_min=1.23.0
go_dl_version=1.23.12
# Each go finds its own GOROOT next to its binary: a GOROOT left in the
# environment could pair one go with another's standard library. And the go
# whose version we checked is the one that builds (no toolchain switch).
unset GOROOT
export GOTOOLCHAIN=local

# ghz goes to the first GOPATH entry's bin (~/go/bin by default), where
# bench/rpc/rpc_bench.py looks for it.
gopath="$(go env GOPATH 2>/dev/null || true)"
gopath="${gopath%%:*}"
gobin="${gopath:-$HOME/go}/bin"

# Succeeds if the go binary $1 exists, runs and is at least $go_min.
go_ok() {
  local v
  v="$("$1" env GOVERSION 2>/dev/null)" || return 1
  v="${v#go}"
  [ -n "$v" ] && [ "$(printf '%s\n' "$go_min" "$v" | sort -V | head -n1)" = "$go_min" ]
}

# Unpacks Go $go_dl_version into $1 (a cache directory, reused by later
# runs), fetched by the Go module proxy's own client: `go mod download` of
# the module golang.org/toolchain, as go itself fetches toolchains, with
# whatever go is at hand (bookworm's golang-go, Go 1.19, is enough for
# that) and the machine's GOPROXY setting.
fetch_go() {
  local dest="$1" arch modver boot dir
  case "$(dpkg --print-architecture 2>/dev/null || uname -m)" in
    amd64 | x86_64) arch=amd64 ;;
    arm64 | aarch64) arch=arm64 ;;
    *) echo "no Go toolchain for this architecture; install Go >= $go_min" >&2; return 1 ;;
  esac
  modver="v0.0.1-go$go_dl_version.linux-$arch"
  boot="$(command -v go || true)"
  if [ -z "$boot" ]; then
    apt_install_missing golang-go
    boot=/usr/bin/go
  fi
  mkdir -p "$(dirname "$dest")"
  go_tmp="$(mktemp -d "$(dirname "$dest")/tmp.XXXXXX")"  # global: the trap needs it
  trap 'rm -rf "$go_tmp"' EXIT
  echo "fetching Go $go_dl_version (module golang.org/toolchain@$modver) with $("$boot" version)"
  dir="$(cd "$go_tmp" && GOMODCACHE="$go_tmp/mod" GOFLAGS=-modcacherw GO111MODULE=on \
    "$boot" mod download -json "golang.org/toolchain@$modver" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')"
  [ -x "$dir/bin/go" ] || chmod -R a+x "$dir/bin" "$dir/pkg/tool"
  rm -rf "$dest"
  mv -T "$dir" "$dest"
  rm -rf "$go_tmp"
  trap - EXIT
}

# go install builds report version "dev": a marker file records the version.
if ! [ -x "$gobin/ghz" ] || [ "$(cat "$gobin/.ghz-version" 2>/dev/null)" != "$ghz_version" ]; then
  go_dir="${XDG_CACHE_HOME:-$HOME/.cache}/arenarpc/go$go_dl_version"
  go_bin=""
  for g in "$(command -v go || true)" /usr/local/go/bin/go "$go_dir/bin/go"; do
    if [ -n "$g" ] && go_ok "$g"; then go_bin="$g"; break; fi
  done
  if [ -z "$go_bin" ]; then
    fetch_go "$go_dir"
    go_ok "$go_dir/bin/go" || { echo "$go_dir/bin/go does not run" >&2; exit 1; }
    go_bin="$go_dir/bin/go"
  fi
  echo "installing ghz $ghz_version into $gobin with $("$go_bin" version)"
  GOBIN="$gobin" "$go_bin" install "github.com/bojand/ghz/cmd/ghz@$ghz_version"
  echo "$ghz_version" > "$gobin/.ghz-version"
fi
