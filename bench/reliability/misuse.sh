#!/usr/bin/env bash
# Misuse and silent fallbacks made loud (docs/DESIGN.md, "Misuse"):
# runs the death tests and the fallback tests in the ASan+UBSan debug build
# and keeps their results in docs/raw/reliability/misuse_asan.txt.
# BUILD_DIR overrides the build directory (default build/asan).
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${BUILD_DIR:-build/asan}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DARENARPC_SANITIZE=address,undefined >/dev/null
tests=(page_pool_test arena_test arena_page_size_test message_pool_test
       object_pool_test object_pool_default_test grpc_allocator_test)
cmake --build "$build" -j2 --target "${tests[@]}" >/dev/null
filter='*DeathTest*:*MagazineAllocationFailure*:ArenaPageSizeTest*:'
filter+='*DestroyedPoolLeavesTheStats*:*ReusedArenaIsNotPoisoned*'
out=docs/raw/reliability/misuse_asan.txt
mkdir -p "$(dirname "$out")"
{
  echo "# bench/reliability/misuse.sh: $build (Debug, ASan+UBSan)," \
    "commit $(git rev-parse --short HEAD)"
  for t in "${tests[@]}"; do
    echo "## $t"
    bin="$(find "$build" -type f -name "$t" -perm -u+x | head -1)"
    ASAN_OPTIONS=detect_leaks=1 "$bin" --gtest_filter="$filter" 2>&1 |
      grep -E '^\[ +(OK|FAILED|SKIPPED|PASSED) +\]' | sed -E 's/ \([0-9]+ ms\)//'
  done
} >"$out"
cat "$out"
! grep -q FAILED "$out"
