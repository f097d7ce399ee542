#!/usr/bin/env bash
# Small messages (health, 0 B) at 1,000 calls/s: the corpus server in each
# mode (none = plain gRPC), with gRPC's sync pool bounds as they come
# (default: MIN_POLLERS 1, MAX_POLLERS 2, threads start and end under load)
# and fixed (4 / 16; sync API only), ROUNDS (3) interleaved rounds, the
# order of the modes rotating by round; perf stat over 8 s of each:
# the server's CPU from /proc (every thread's), task-clock, context
# switches, page faults and the syscalls that
# thread churn and page release make (clone3, mmap, munmap, madvise).
# perf stat -p attaches to the threads alive when it starts: its
# task-clock came to 69-92 % of /proc's CPU over the same window, so the
# ratios use /proc. perf record -p did worse on the sync server (12
# samples in 4 s, where perf record -a gave ~380 for the same process).
# usage: [ROUNDS=N] [MODES="none auto"] [POLS=fixed] bench/corpus/small_perfstat.sh API OUTDIR
# API: sync, callback or async. MODES: the server's --mode values (default
# all five: none heap arena reuse auto). POLS: the sync pool bounds to run
# (default both: default fixed).
set -u
api=$1; out=$2; shift 2
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
B="${BUILD:-$ROOT/build/release}/bench/corpus"
GHZ="$(command -v ghz || echo "$HOME/go/bin/ghz")"
mkdir -p $out
: > "$out/log.txt"  # the run lines, for the summary at the end
echo "loadavg before: $(cat /proc/loadavg)"
rounds=${ROUNDS:-3}
pols=${POLS:-default fixed}
[ "$api" = sync ] || pols=default  # the pool flags are the sync API's
read -r -a modes <<< "${MODES:-none heap arena reuse auto}"
n=${#modes[@]}
for round in $(seq 1 "$rounds"); do
for pol in $pols; do
# The order rotates by round, so no mode always runs first or last.
for k in $(seq 0 $((n - 1))); do
  mode=${modes[$(( (k + round - 1) % n ))]}
  extra=""; [ $pol = fixed ] && extra="--sync_min_pollers=4 --sync_max_pollers=16"
  $B/arenarpc_corpus_server --port=0 --mode=$mode --api=$api $extra > $out/srv.log 2>&1 &
  spid=$!
  for i in $(seq 100); do grep -q listening $out/srv.log && break; sleep 0.1; done
  port=$(grep -o 'listening on [0-9.:]*' $out/srv.log | sed 's/.*://')
  taskset -c 1 $GHZ --insecure --async --rps=1000 --duration=12s --connections=1 --concurrency=8 --cpus=1 \
     --proto $ROOT/bench/corpus/protos/grpc/health/v1/health.proto --import-paths $ROOT/bench/corpus/protos \
     --call=grpc.health.v1.Health.Check -d '{}' 127.0.0.1:$port > $out/ghz.txt 2>&1 &
  gpid=$!
  sleep 2.5
  # The process's CPU from /proc (utime + stime of every thread, the ones
  # that ended included), the figure the medians use; perf's counts beside.
  t0=$(awk '{print $14 + $15}' /proc/$spid/stat)
  perf stat -e task-clock,context-switches,page-faults,syscalls:sys_enter_clone3,syscalls:sys_enter_futex,syscalls:sys_enter_mmap,syscalls:sys_enter_munmap,syscalls:sys_enter_madvise -p $spid -o $out/stat.txt -- sleep 8
  t1=$(awk '{print $14 + $15}' /proc/$spid/stat)
  wait $gpid
  kill $spid; wait $spid 2>/dev/null
  calls=$(grep -m1 "Count:" $out/ghz.txt | awk '{print $2}')
  tick=$(getconf CLK_TCK)
  echo "r$round $pol $mode calls=$calls proc_cpu_ms=$(( (t1 - t0) * 1000 / tick )) $(grep -E 'task-clock|switches|faults|syscalls' $out/stat.txt | awk '{printf "%s %s; ", $1, $2}' | sed 's/syscalls:sys_enter_//g')" | tee -a "$out/log.txt"
done
done
done
echo "loadavg after: $(cat /proc/loadavg)"
echo
echo "# medians (bench/corpus/small_perfstat_summary.py)"
python3 "$ROOT/bench/corpus/small_perfstat_summary.py" "$out/log.txt" "$api"
