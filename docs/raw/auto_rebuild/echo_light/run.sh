#!/bin/bash
cd /work/main
for api in sync callback async; do
  flock /tmp/arenarpc-bench.lock /usr/bin/python3 bench/capacity/capacity.py --build build/rel --baseline_build /work/before/build/rel \
    --targets echo --api $api --modes plain,arena,reuse,auto,auto@baseline --rounds 3 --light 300 --step_s 10 --warmup_s 3 \
    --out /tmp/echo_ba/$api > /tmp/echo_ba/$api.log 2>&1
done
