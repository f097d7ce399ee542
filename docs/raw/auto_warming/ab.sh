#!/usr/bin/env bash
# auto with reuse's warming calls left out (new) against main (old), with
# the fixed arena and reuse of the new build in the same rounds: which mode
# auto settles on and its CPU per call. capacity.py --light: open loop,
# one mode per fresh server.
cd /work/main
D=/work/exp/ab7
run() {  # target api rate round build mode
  local t=$1 api=$2 rate=$3 r=$4 v=$5 mode=$6
  local o=$D/out_${t}_${api}_${v}_${mode}_r$r
  /usr/bin/python3 bench/capacity/capacity.py --build /work/prof/ab7/$v --targets $t --api $api --light $rate \
    --step_s 20 --warmup_s 5 --modes $mode --rounds 1 --out $o --plot_dir $o 2>&1 | grep -E "/s: ok|Error|error"
}
t=${1:-cortex_push}; api=${2:-async}; rate=${3:-150}; rounds=${4:-7}
for r in $(seq 1 $rounds); do
  if [ $((r % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for v in $order; do run $t $api $rate $r $v auto; done
  run $t $api $rate $r new arena
  run $t $api $rate $r new reuse
done
