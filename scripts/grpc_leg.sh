#!/usr/bin/env bash
# The second gRPC release: arenarpc's whole tree (the gRPC adapters, their
# tests, the examples' and the corpus's smoke tests, the core's tests)
# built in Release with -Werror against gRPC 1.56.2 and protobuf 23.1
# (scripts/grpc_fixture.sh), and its ctest suite run. Debian's gRPC 1.51 is
# the release every other leg of scripts/test.sh uses.
#
#   bash scripts/grpc_leg.sh           build, test, and on success write the
#                                      kept output (below)
#   bash scripts/grpc_leg.sh --check   compare the kept output's hash with
#                                      the tree's (what scripts/test.sh runs)
#   bash scripts/grpc_leg.sh --hash    print the tree's hash
#
# A cold run (fixture and ccache empty) takes over an hour on 2 cores, more
# than the CI's budget, so CI does not run it; instead the kept output
# docs/raw/grpc_versions/grpc156.txt records the hash of the files through
# which the adapters reach gRPC (src/grpc, include/arenarpc/grpc) as they
# were when this leg last passed, and scripts/test.sh fails when the tree's
# differs: a change there lands with this leg run again on it.
#
# ARENARPC_CACHE_DIR: the fixture's and ccache's cache, as in scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
record=docs/raw/grpc_versions/grpc156.txt

adapters_hash() {
  local files
  if git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
    files="$(git ls-files -- src/grpc include/arenarpc/grpc)"
  else
    files="$(find src/grpc include/arenarpc/grpc -type f)"
  fi
  # Paths and contents, in a fixed order: the same tree hashes the same in
  # every clone.
  printf '%s\n' "$files" | LC_ALL=C sort | while IFS= read -r f; do
    printf '%s %s\n' "$(sha256sum < "$f" | cut -d' ' -f1)" "$f"
  done | sha256sum | cut -c1-16
}

case "${1:-}" in
  --hash)
    adapters_hash
    exit 0
    ;;
  --check)
    now="$(adapters_hash)"
    kept="$(sed -n 's/^adapters hash: //p' "$record" 2>/dev/null || true)"
    if [ "$now" != "$kept" ]; then
      echo "grpc_leg: src/grpc or include/arenarpc/grpc changed since the gRPC" \
           "1.56.2 leg last passed (hash ${kept:-missing} in $record, the tree's" \
           "$now): run 'bash scripts/grpc_leg.sh' and commit $record" >&2
      exit 1
    fi
    echo "grpc_leg: $record is this tree's (adapters hash $now)"
    exit 0
    ;;
  "") ;;
  *)
    echo "usage: $0 [--check|--hash]" >&2
    exit 2
    ;;
esac

start=$SECONDS
hash_before="$(adapters_hash)"
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
nice -n 10 cmake --build "$build" -j "$(nproc)"
grep -q '^gRPC_DIR:PATH=.*grpc-1\.56\.2-' "$build/CMakeCache.txt" || {
  echo "grpc_leg: the build did not use the fixture's gRPC 1.56.2" >&2
  exit 1
}
build_seconds=$((SECONDS - build_start))
test_start=$SECONDS
(cd "$build" && ctest --output-on-failure -j "$(nproc)") 2>&1 | tee "$log.ctest"
test_seconds=$((SECONDS - test_start))
if [ "$(adapters_hash)" != "$hash_before" ]; then
  echo "grpc_leg: src/grpc or include/arenarpc/grpc changed during the run" >&2
  exit 1
fi

mkdir -p "$(dirname "$record")"
{
  echo "# The gRPC 1.56.2 leg: bash scripts/grpc_leg.sh (scripts/test.sh checks the"
  echo "# hash below against src/grpc + include/arenarpc/grpc; see the script)."
  echo "adapters hash: $hash_before"
  echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo none)," \
       "$(nproc) cores, load before/after in the last lines; $(${CXX:-c++} --version | head -n1)"
  grep -E "^grpc_fixture: (cached|built|building)" "$log" || true
  echo "gRPC: $(sed -n 's/^gRPC_DIR:PATH=//p' "$build/CMakeCache.txt")"
  grep -E "arenarpc: protobuf" "$log" || true
  grep -E "tests passed|Total Test time|\(Failed\)|\(Timeout\)|Not Run" "$log.ctest" || true
  echo "grpc_leg: fixture $fixture_seconds s, build $build_seconds s," \
       "tests $test_seconds s, whole leg $((SECONDS - start)) s"
  echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$record"
cat "$record"
