#!/usr/bin/env bash
# The main job: builds arenarpc (Release) and runs the tRPC build benchmark
# with glibc malloc and with tcmalloc, printing the comparison tables.
# Pass benchmark flags through, e.g. scripts/demo.sh --reps=9.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh

cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DARENARPC_BUILD_TESTS=OFF > /dev/null
cmake --build build/release -j "$(nproc)"

echo "== tRPC build benchmark (4 threads x 500 tasks, ~200 KB messages) =="
build/release/bench/trpc_build_bench --label=glibc "$@"
build/release/bench/trpc_build_bench_tcmalloc --label=tcmalloc "$@"
