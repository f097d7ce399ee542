#!/usr/bin/env bash
# Threads and libraries (docs/DESIGN_NOTES.md, "Threads"): the fast-path cost of
# (a) the per-cache busy flag that lets PagePool::ReleaseIdleCaches empty
# another thread's cache and (b) dropping forced initial-exec TLS, measured
# against a build of BASE (default b806c03, before both). Writes
# docs/raw/reliability/threads_*.txt. Short: ~1 min of benchmarks after the
# two Release builds (bench targets only).
set -euo pipefail
cd "$(dirname "$0")/../.."
base_ref="${BASE:-b806c03}"
jobs="${JOBS:-2}"
base_src="build/reliability-base-src"
rm -rf "$base_src" && mkdir -p "$base_src"
git archive "$base_ref" | tar -x -C "$base_src"
targets=(page_pool_bench object_pool_bench)
cmake -S "$base_src" -B build/reliability-base -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DARENARPC_BUILD_TESTS=OFF -DARENARPC_BUILD_GRPC=OFF >/dev/null
cmake --build build/reliability-base -j "$jobs" --target "${targets[@]}" >/dev/null
cmake -S . -B build/reliability-head -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DARENARPC_BUILD_TESTS=OFF -DARENARPC_BUILD_GRPC=OFF >/dev/null
cmake --build build/reliability-head -j "$jobs" --target "${targets[@]}" >/dev/null
out=docs/raw/reliability
head_ref="$(git rev-parse --short HEAD)"

{
  echo "# PagePool fast path, before ($base_ref) / after ($head_ref). CPU 1, Release."
  echo "# compare the CPU column's medians (shared machine: wall time is noisy)."
  for round in 1 2; do
    for v in base head; do
      echo "== $v round $round"
      taskset -c 1 "build/reliability-$v/bench/page_pool_bench" \
        --benchmark_filter='BM_PagePoolAllocateDeallocate/threads:1|BM_PagePoolBurstOf8$' \
        --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
        --benchmark_min_time=0.2 2>/dev/null | grep -E "median"
    done
  done
} | tee "$out/threads_page_pool_fastpath.txt"

{
  echo "# ObjectPool<T>::Default() (pool) and an instance (pool-instance), before ($base_ref) /"
  echo "# after ($head_ref): ns per New+Delete pair incl. harness; cpu_ns = process CPU per pair."
  for round in 1 2 3 4 5; do
    for v in base head; do
      for a in pool pool-instance; do
        echo "$v round=$round $(taskset -c 1 "build/reliability-$v/bench/object_pool_bench" \
          --alloc=$a --threads=1 --size=64 --rounds=100 | grep ^time)"
      done
    done
  done
  for v in base head; do
    echo "$v: __tls_get_addr calls in object_pool_bench:" \
      "$(objdump -d "build/reliability-$v/bench/object_pool_bench" | grep -c 'call.*__tls_get_addr' || true)"
  done
} | tee "$out/threads_object_pool_tls.txt"

cmake -S . -B build/reliability-head -DARENARPC_BUILD_TESTS=OFF >/dev/null
cmake --build build/reliability-head -j "$jobs" --target idle_caches_bench >/dev/null
{
  echo "# build/release/bench/idle_caches_bench (defaults: --threads=16 --idle_ms=500 --period_ms=250), Release, default PagePoolOptions"
  build/reliability-head/bench/idle_caches_bench
} | tee "$out/threads_idle_caches.txt"
