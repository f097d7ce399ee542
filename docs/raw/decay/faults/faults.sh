#!/usr/bin/env bash
# Where reuse's extra CPU after a burst comes from: reuse alone, idle decay (new) vs none
# (old), Cortex sync at 150/s for 20 s, with and without the 3 s burst at 700/s before;
# the server's minor page faults per call recorded. Interleaved, order alternating by round.
cd <tree>
D=/tmp/run/ab_decay/faults
mkdir -p $D
declare -A B=([old]=<old tree>/build/release [new]=<new tree>/build/release)
echo "start $(date +%H:%M:%S) load $(cat /proc/loadavg)" > $D/load.txt
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for v in $order; do for burst in 0 700; do
    out=$D/out_${v}_burst${burst}_r$r
    flock /tmp/arenarpc-bench.lock /usr/bin/python3 bench/capacity/capacity.py --build ${B[$v]} --targets cortex_push --api sync \
      --light 150 --burst_rate $burst --burst_s 3 --step_s 20 --warmup_s 5 --modes reuse --rounds 1 \
      --server_args="--memory_trace_ms=250 --memory_trace_file=$D/${v}_burst${burst}_r$r.txt" \
      --out $out --plot_dir $out 2>&1 | grep -E "/s: ok|Error|error" | sed "s/^/$v burst$burst r$r /"
  done; done
done
echo "end $(date +%H:%M:%S) load $(cat /proc/loadavg)" >> $D/load.txt
