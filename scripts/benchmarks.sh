#!/usr/bin/env bash
# Regenerates every figure in docs/ (see docs/MEASURE.md). Takes about
# 80 minutes on 2 cores; run it on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DARENARPC_BUILD_TESTS=OFF > /dev/null
cmake --build build/release -j "$(nproc)"

b=build/release/bench
{
  echo "# tRPC build benchmark ($(date -u +%F))"
  $b/trpc_build_bench --label=glibc --reps=5
  $b/trpc_build_bench_tcmalloc --label=tcmalloc --reps=5
} | tee docs/raw/trpc_build/trpc_build_results.md
$b/page_pool_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  | tee docs/raw/page_pool/page_pool_bench.txt
/usr/bin/python3 bench/message_pool/reuse_skew.py --bin $b/reuse_skew_bench --out docs/raw/reuse_skew \
  --plot docs/reuse_rss.png
/usr/bin/python3 bench/object_pool/object_pool_compare.py --build-dir build/release \
  --reps=5 --rounds=50 --sizes=64 --skip-memory \
  --raw docs/raw/object_pool/headline_raw.txt | tee docs/raw/object_pool/headline.md
/usr/bin/python3 bench/object_pool/object_pool_compare.py --build-dir build/release \
  --reps=5 --rounds=10 --raw docs/raw/object_pool/grid_raw.txt \
  --plot docs/object_pool_grid.png | tee docs/raw/object_pool/grid.md
/usr/bin/python3 bench/rpc/rpc_bench.py --build build/release --full
/usr/bin/python3 bench/corpus/corpus.py --out docs/raw/corpus   # ~60 minutes
