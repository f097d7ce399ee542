#!/usr/bin/env bash
cd /work/main
D=/work/exp/ab
for api in sync callback; do
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for v in $order; do for mode in reuse auto; do
    /usr/bin/python3 bench/capacity/capacity.py --build /work/prof/ab/$v --targets echo --api $api --light 600 --step_s 15 --warmup_s 5 --modes $mode --rounds 1 \
      --out $D/echo_${api}_${v}_${mode}_r$r --plot_dir $D/echo_${api}_${v}_${mode}_r$r 2>&1 | grep -E "/s: ok|Error|error"
  done; done
done; done
