#!/usr/bin/env bash
# After a burst, under the load that follows: decay with stack trimming (new: a
# thread's cache gives the items no Pop reached in a period to the depot) vs decay
# as on main before it (old, 01921bd: stacks released only when unchanged for a
# period). Cortex on the sync API: 5 s warm-up at 150/s, 3 s at 700/s, then 20 s
# measured at 150/s (after 1 s); memory trace every 250 ms. One mode per server,
# interleaved, order alternating by round.
cd <new tree>
D=${D:-/tmp/run/ab_trim/burst}
mkdir -p $D
declare -A B=([old]=<old tree>/build/release [new]=<new tree>/build/release)
echo "start $(date +%H:%M:%S) load $(cat /proc/loadavg)" > $D/load.txt
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for v in $order; do
    for mode in ${MODES:-reuse auto arena}; do
      out=$D/out_${v}_${mode}_r$r
      flock /tmp/arenarpc-bench.lock /usr/bin/python3 bench/capacity/capacity.py --build ${B[$v]} --targets cortex_push --api sync \
        --light 150 --burst_rate 700 --burst_s 3 --step_s 20 --warmup_s 5 --modes $mode --rounds 1 \
        --server_args="--memory_trace_ms=250 --memory_trace_file=$D/${v}_${mode}_r$r.txt" \
        --out $out --plot_dir $out 2>&1 | grep -E "/s: ok|Error|error"
    done
  done
done
echo "end $(date +%H:%M:%S) load $(cat /proc/loadavg)" >> $D/load.txt
