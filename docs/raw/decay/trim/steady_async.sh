#!/usr/bin/env bash
# Steady load, no burst: stack trimming (new) vs main before it (old). Cortex on the
# async API, 1 call posted per method per queue, 5 s warm-up then 20 s at 110/s
# (about half of plain's capacity); memory trace every 250 ms; 3 rounds interleaved.
cd <new tree>
D=${D:-/tmp/run/ab_trim/steady_async}
mkdir -p $D
declare -A B=([old]=<old tree>/build/release [new]=<new tree>/build/release)
echo "start $(date +%H:%M:%S) load $(cat /proc/loadavg)" > $D/load.txt
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for v in $order; do
    for mode in ${MODES:-reuse auto arena}; do
      out=$D/out_${v}_${mode}_r$r
      flock /tmp/arenarpc-bench.lock /usr/bin/python3 bench/capacity/capacity.py --build ${B[$v]} --targets cortex_push --api async \
        --light 110 --step_s 20 --warmup_s 5 --modes $mode --rounds 1 \
        --server_args="--async_pending=1 --memory_trace_ms=250 --memory_trace_file=$D/${v}_${mode}_r$r.txt" \
        --out $out --plot_dir $out 2>&1 | grep -E "/s: ok|Error|error"
    done
  done
done
echo "end $(date +%H:%M:%S) load $(cat /proc/loadavg)" >> $D/load.txt
