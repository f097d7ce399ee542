#!/usr/bin/env bash
# Where sync Cortex reuse's peak RSS at capacity goes: one round of reuse with the
# corpus server's memory trace (100 ms). The trace file is rewritten by each fresh
# server, so the one kept is the last server's: the confirmation step at capacity,
# whose peak is the peak RSS at capacity (--no_half_load: no half-load step).
cd "$(dirname "$0")/../../../.."  # the repository root (run from a Release build in build/release)
out=${OUT:-/tmp/reuse_rss_trace}; mkdir -p "$out"
echo "start $(date +%H:%M:%S) load $(cat /proc/loadavg)" > $out/load.txt
flock /tmp/arenarpc-bench.lock /usr/bin/python3 bench/capacity/capacity.py --build build/release \
  --targets cortex_push --api sync --modes reuse --rounds 1 --stall_cpu_share 0 --no_half_load \
  --server_args="--memory_trace_ms=100 --memory_trace_file=$out/trace.txt" \
  --out $out --plot_dir $out > $out/run.log 2>&1
echo "rc=$? end $(date +%H:%M:%S) load $(cat /proc/loadavg)" >> $out/load.txt
