#!/usr/bin/env bash
# A/B: idle decay (new, ab8e1a6) vs none (old, 43aeae0). Frozen Release builds of the
# two commits; Cortex at a fixed rate near capacity, one mode per server, interleaved,
# order alternating by round; memory trace every 500 ms.
cd <tree>
D=/tmp/run/ab_decay
declare -A B=([old]=<old tree>/build/release [new]=<new tree>/build/release)
declare -A RATE=([sync]=300 [async]=250)
declare -A EXTRA=([sync]="" [async]="--async_pending=1")
echo "start $(date +%H:%M:%S) load $(cat /proc/loadavg)" > $D/load.txt
for api in sync async; do
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for v in $order; do for mode in reuse auto arena; do
    out=$D/out_${api}_${v}_${mode}_r$r
    flock /tmp/arenarpc-bench.lock /usr/bin/python3 bench/capacity/capacity.py --build ${B[$v]} --targets cortex_push --api $api \
      --light ${RATE[$api]} --step_s 20 --warmup_s 5 --modes $mode --rounds 1 \
      --server_args="${EXTRA[$api]} --memory_trace_ms=500 --memory_trace_file=$D/${api}_${v}_${mode}_r$r.txt" \
      --out $out --plot_dir $out 2>&1 | grep -E "/s: ok|Error|error"
  done; done
done; done
echo "end $(date +%H:%M:%S) load $(cat /proc/loadavg)" >> $D/load.txt
