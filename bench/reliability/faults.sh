#!/usr/bin/env bash
# docs/OPERATE.md, "When memory runs out": the allocation-failure tests (OS mappings
# and heap allocations refused 1 in N; a gRPC server whose page pool gets no
# pages) in the ASan+UBSan build; their output, with the figures they print,
# goes to docs/raw/reliability/faults.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DARENARPC_SANITIZE=address,undefined -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
  -DCMAKE_C_COMPILER_LAUNCHER=ccache >/dev/null
cmake --build build/asan -j "${ARENARPC_JOBS:-2}" --target fault_injection_test grpc_fault_test
out=docs/raw/reliability/faults.txt
mkdir -p "$(dirname "$out")"
{
  echo "# bench/reliability/faults.sh, $(date -u +%FT%TZ), ASan+UBSan Debug, $(nproc) cores"
  for t in fault_injection_test grpc_fault_test; do
    echo "## build/asan/tests/$t"
    ASAN_OPTIONS=detect_leaks=1 "build/asan/tests/$t" 2>&1
  done
} >"$out"
grep -E '^figure:|PASSED|FAILED' "$out"
! grep -qE 'FAILED|Sanitizer|runtime error' "$out"
