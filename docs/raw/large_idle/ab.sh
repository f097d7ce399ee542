#!/usr/bin/env bash
# A/B: large idle pooled instances one per thread, the rest in the shared depot (new) vs up to 4 per thread (old, main).
# Frozen Release builds of one tree: /work/prof/ab5/{old,new}. Interleaved, order alternating by round.
cd /work/main
D=/work/exp/ab5
for api in callback sync async; do
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for v in $order; do for mode in reuse auto; do
    /usr/bin/python3 bench/capacity/capacity.py --build /work/prof/ab5/$v --targets cortex_push --api $api --light 150 --step_s 20 --warmup_s 5 --modes $mode --rounds 1 \
      --server_args="--memory_trace_ms=500 --memory_trace_file=$D/${api}_${v}_${mode}_r$r.txt" --out $D/out_${api}_${v}_${mode}_r$r --plot_dir $D/out_${api}_${v}_${mode}_r$r 2>&1 | grep -E "/s: ok|Error|error"
  done; done
done; done
for api in sync callback; do
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for v in $order; do for mode in reuse auto; do
    /usr/bin/python3 bench/capacity/capacity.py --build /work/prof/ab5/$v --targets echo --api $api --light 600 --step_s 15 --warmup_s 5 --modes $mode --rounds 1 \
      --out $D/echo_${api}_${v}_${mode}_r$r --plot_dir $D/echo_${api}_${v}_${mode}_r$r 2>&1 | grep -E "/s: ok|Error|error"
  done; done
done; done
