#!/usr/bin/env bash
# A/B: a reuse trial ending after auto settled in another mode gives its instance back (new) vs main (old).
# Frozen Release builds: /work/prof/ab5/old (main's library), /work/prof/ab6/new (the change). Interleaved, order alternating by round.
cd /work/main
D=/work/exp/ab6
mkdir -p $D
for t in horaedb_write:100 cortex_push:150; do
  tgt=${t%%:*}; rate=${t##*:}
  for r in 1 2 3 4; do
    if [ $((r % 2)) = 1 ]; then order="old new"; else order="new old"; fi
    for v in $order; do
      b=/work/prof/ab5/old; [ $v = new ] && b=/work/prof/ab6/new
      /usr/bin/python3 bench/capacity/capacity.py --build $b --targets $tgt --api async --light $rate --step_s 20 --warmup_s 5 --modes auto --rounds 1 \
        --server_args="--memory_trace_ms=500 --memory_trace_file=$D/${tgt}_${v}_r$r.txt" --out $D/out_${tgt}_${v}_r$r --plot_dir $D/out_${tgt}_${v}_r$r 2>&1 | grep -E "/s: ok|Error|error"
    done
  done
done
