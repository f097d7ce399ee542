#!/usr/bin/env bash
# More rounds of Cortex async auto (which mode it settles on, by build).
cd /work/main
D=/work/exp/ab5
api=async; mode=auto
for r in 4 5 6 7; do
  if [ $((r % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for v in $order; do
    /usr/bin/python3 bench/capacity/capacity.py --build /work/prof/ab5/$v --targets cortex_push --api $api --light 150 --step_s 20 --warmup_s 5 --modes $mode --rounds 1 \
      --server_args="--memory_trace_ms=500 --memory_trace_file=$D/${api}_${v}_${mode}_r$r.txt" --out $D/out_${api}_${v}_${mode}_r$r --plot_dir $D/out_${api}_${v}_${mode}_r$r 2>&1 | grep -E "/s: ok|Error|error"
  done
done
