#!/usr/bin/env bash
# The async completion-queue example stopped while calls queue up: a client
# keeps 64 large calls in flight, the server gets SIGTERM with a grace of
# 1 ms, so gRPC cancels what is left while calls are still being answered,
# and every CallData (its pooled messages with it) goes at shutdown. gRPC
# aborts the process if an operation starts on a queue after its
# Shutdown(), which requests that arrived before the shutdown invite (a
# race: failed on the ASan build before the example guarded its queues).
# The server must have been busy serving when stopped (its CPU time says
# so) and must exit 0 within 60 s, every round.
# usage: async_shutdown_under_load.sh SERVER CLIENT MODE [ROUNDS]
set -euo pipefail
server=$1 client=$2 mode=$3 rounds=${4:-5}
out=$(mktemp) err=$(mktemp)
pid= client_pid=
cleanup() {
  [ -n "$client_pid" ] && kill "$client_pid" 2>/dev/null
  [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
  rm -f "$out" "$err"
}
trap cleanup EXIT
source "$(dirname "$0")/wait_for_port.sh"
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
fail() { echo "round $round: $*"; tail -20 "$err"; exit 1; }

for round in $(seq 1 "$rounds"); do
  : >"$out"
  "$server" --port=0 --mode="$mode" --shutdown_grace_ms=1 >"$out" 2>"$err" &
  pid=$!
  wait_for_port "$pid" "$out" "$err"
  # Fails once the server is gone: its status is not what is tested.
  "$client" --target="127.0.0.1:$port" --calls=1000000 --concurrency=64 \
    --scale=100 >/dev/null 2>&1 &
  client_pid=$!
  before=$(cpu_ticks "$pid")
  sleep 2
  kill -0 "$pid" 2>/dev/null || fail "server died under load"
  busy=$(( $(cpu_ticks "$pid") - before ))
  # At least 0.2 s of CPU in the 2 s: it was answering calls.
  [ "$busy" -ge $(( $(getconf CLK_TCK) / 5 )) ] ||
    fail "server not busy when stopped ($busy ticks): the client did not load it"
  kill -TERM "$pid"
  for _ in $(seq 1 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && fail "server still running 60 s after SIGTERM"
  status=0
  wait "$pid" || status=$?
  pid=
  kill "$client_pid" 2>/dev/null || true
  wait "$client_pid" 2>/dev/null || true
  client_pid=
  [ "$status" -eq 0 ] || fail "server exit status $status"
done
echo "async shutdown under load ok ($mode, $rounds rounds)"
