#!/usr/bin/env bash
# The async completion-queue example stopped while calls queue up: a client
# keeps 64 large calls in flight, the server gets SIGTERM with a grace of
# 1 ms, so gRPC cancels what is left while calls are still being answered,
# and every CallData (its pooled messages with it) goes at shutdown. gRPC
# aborts the process if an operation starts on a queue after its
# Shutdown(), which requests that arrived before the shutdown invite
# (failed on the ASan build before the example guarded its queues). The
# server must exit 0 every time.
# usage: async_shutdown_under_load.sh SERVER CLIENT MODE [ROUNDS]
set -euo pipefail
server=$1 client=$2 mode=$3 rounds=${4:-3}
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
source "$(dirname "$0")/wait_for_port.sh"

for round in $(seq 1 "$rounds"); do
  : >"$out"
  "$server" --port=0 --mode="$mode" --shutdown_grace_ms=1 >"$out" 2>"$err" &
  pid=$!
  wait_for_port "$pid" "$out" "$err"
  # Fails once the server is gone: its status is not what is tested.
  "$client" --target="127.0.0.1:$port" --calls=1000000 --concurrency=64 \
    --scale=100 >/dev/null 2>&1 &
  client_pid=$!
  sleep 2
  kill -TERM "$pid"
  status=0
  wait "$pid" || status=$?
  kill "$client_pid" 2>/dev/null || true
  wait "$client_pid" 2>/dev/null || true
  if [ "$status" -ne 0 ]; then
    echo "round $round: server exit status $status"
    tail -20 "$err"
    exit 1
  fi
done
echo "async shutdown under load ok ($mode, $rounds rounds)"
