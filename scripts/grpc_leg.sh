#!/usr/bin/env bash
# The second gRPC release: arenarpc's whole tree (the libraries, tools,
# examples, benchmarks and tests) built in Release with -Werror against
# gRPC 1.56.2 and protobuf 23.1 (scripts/grpc_fixture.sh, cached by its
# hash), and its ctest suite run: the grpc156 leg of scripts/test.sh.
# Debian's gRPC 1.51 is the release every other leg uses. Whole tree, not
# only what ctest runs: this is also CI's Release build (-O2 warnings).
#
#   bash scripts/grpc_leg.sh          build and test; on success the leg's
#                                     summary goes to build/grpc156/leg.txt
#   bash scripts/grpc_leg.sh --keep   the same, and the summary kept as
#                                     docs/raw/grpc_versions/grpc156.txt
#
# ARENARPC_CACHE_DIR: the fixture's and ccache's cache, as in scripts/test.sh.
# ARENARPC_JOBS: build and ctest jobs (default nproc). Exit code 3 when the
# fixture's sources cannot be fetched.
set -euo pipefail
cd "$(dirname "$0")/.."
keep=""
case "${1:-}" in
  --keep) keep=docs/raw/grpc_versions/grpc156.txt ;;
  "") ;;
  *)
    echo "usage: $0 [--keep]" >&2
    exit 2
    ;;
esac
jobs="${ARENARPC_JOBS:-$(nproc)}"

start=$SECONDS
log="$(mktemp)"
trap 'rm -f "$log" "$log.cmake" "$log.ctest"' EXIT
fixture_start=$SECONDS
rc=0
prefix="$(scripts/grpc_fixture.sh release 2> >(tee -a "$log" >&2))" || rc=$?
if [ "$rc" -ne 0 ]; then
  [ "$rc" -ne 3 ] || echo "grpc_leg: the fixture's sources could not be fetched" >&2
  exit "$rc"
fi
fixture_seconds=$((SECONDS - fixture_start))

cache_dir="${ARENARPC_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/arenarpc}"
export CCACHE_DIR="$cache_dir/ccache" CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-2G}"
build=build/grpc156
# A new fixture key is a new prefix: forget the cached package paths.
rm -f "$build/CMakeCache.txt"
build_start=$SECONDS
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DARENARPC_WERROR=ON -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache \
  > "$log.cmake" 2>&1 || { cat "$log.cmake" >&2; exit 1; }
cat "$log.cmake" >> "$log"
grep -q "arenarpc: protobuf 4.23.1" "$log" || {
  echo "grpc_leg: the build did not find the fixture's protobuf 23.1" >&2
  exit 1
}
cmake --build "$build" -j "$jobs"
grep -q '^gRPC_DIR:PATH=.*grpc-1\.56\.2-' "$build/CMakeCache.txt" || {
  echo "grpc_leg: the build did not use the fixture's gRPC 1.56.2" >&2
  exit 1
}
build_seconds=$((SECONDS - build_start))
test_start=$SECONDS
# Every test but doc_snippets, which compiles the documentation's snippets:
# the asan leg does; compiling the same text again against this gRPC costs
# CPU-minutes and checks little the consumer tests do not.
(cd "$build" && ctest --output-on-failure -j "$jobs" -E '^doc_snippets$') 2>&1 |
  tee "$log.ctest"
test_seconds=$((SECONDS - test_start))

{
  echo "# The gRPC 1.56.2 leg: bash scripts/grpc_leg.sh (the grpc156 leg of scripts/test.sh)."
  echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo none)," \
       "$(nproc) cores, load at the end in the last line; $(${CXX:-c++} --version | head -n1)"
  grep -E "^grpc_fixture: (cached|built|building)" "$log" || true
  echo "gRPC: $(sed -n 's/^gRPC_DIR:PATH=//p' "$build/CMakeCache.txt")"
  grep -E "arenarpc: protobuf" "$log" || true
  grep -E "tests passed|Total Test time|\(Failed\)|\(Timeout\)|Not Run" "$log.ctest" || true
  echo "grpc_leg: fixture $fixture_seconds s, build $build_seconds s," \
       "tests $test_seconds s, whole leg $((SECONDS - start)) s"
  echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$build/leg.txt"
cat "$build/leg.txt"
if [ -n "$keep" ]; then
  mkdir -p "$(dirname "$keep")"
  cp "$build/leg.txt" "$keep"
fi
