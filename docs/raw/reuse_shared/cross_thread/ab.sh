#!/usr/bin/env bash
# A/B v2: large pooled instances given back on another thread go to the shared depot (new2) vs main (old).
cd /work/main
D=/work/exp/ab2
mkdir -p $D
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then order="old new2"; else order="new2 old"; fi
  for api in callback sync; do
  for v in $order; do for mode in reuse auto; do
    /usr/bin/python3 bench/capacity/capacity.py --build /work/prof/ab/$v --targets cortex_push --api $api --light 150 --step_s 20 --warmup_s 5 --modes $mode --rounds 1 \
      --server_args="--memory_trace_ms=500 --memory_trace_file=$D/${api}_${v}_${mode}_r$r.txt" --out $D/out_${api}_${v}_${mode}_r$r --plot_dir $D/out_${api}_${v}_${mode}_r$r 2>&1 | grep -E "/s: ok|Error|error"
    /usr/bin/python3 bench/capacity/capacity.py --build /work/prof/ab/$v --targets echo --api $api --light 600 --step_s 15 --warmup_s 5 --modes $mode --rounds 1 \
      --out $D/echo_${api}_${v}_${mode}_r$r --plot_dir $D/echo_${api}_${v}_${mode}_r$r 2>&1 | grep -E "/s: ok|Error|error"
  done; done
  done
done
