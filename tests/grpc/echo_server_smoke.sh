#!/usr/bin/env bash
# The installed server binary, end to end on 127.0.0.1: starts
# arenarpc_echo_server --port=0 --mode=MODE, waits for "listening on N",
# runs the client (unary calls on pooled arenas, then on pooled messages, a
# stream, health check and reflection listing; then the blocking and the
# completion-queue stubs), stops the server with
# SIGNAL (default TERM) and expects a clean exit with the calls counted.
# STREAM "nostream": the server serves no stream (the async example).
# usage: echo_server_smoke.sh SERVER CLIENT MODE [SIGNAL [STREAM]]
set -euo pipefail
server=$1 client=$2 mode=$3 signal=${4:-TERM} stream=${5:-stream}
stream_messages=5
[ "$stream" = nostream ] && stream_messages=0
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

source "$(dirname "$0")/wait_for_port.sh"
"$server" --port=0 --mode="$mode" >"$out" 2>"$err" &
pid=$!
wait_for_port "$pid" "$out" "$err"

rc=0
"$client" --target="127.0.0.1:$port" --calls=50 --concurrency=8 --scale=20 \
  --stream_messages="$stream_messages" --check_health --check_reflection || rc=$?
"$client" --target="127.0.0.1:$port" --calls=50 --concurrency=8 --scale=20 \
  --messages=reuse || rc=$?
# The blocking and the completion-queue stubs, each with a message kind.
"$client" --target="127.0.0.1:$port" --calls=50 --concurrency=8 --scale=20 \
  --stub=sync --messages=arena || rc=$?
"$client" --target="127.0.0.1:$port" --calls=50 --concurrency=8 --scale=20 \
  --stub=async --messages=reuse || rc=$?

kill "-$signal" "$pid"
wait "$pid" || { echo "server exit status $?"; cat "$err"; exit 1; }
[ "$rc" -eq 0 ] || { echo "client failed: $rc"; exit 1; }
# auto counts each call under the mode it ran in: the sum is what counts.
calls=$(awk -v m="$mode" '/^arenarpc_grpc_calls_total\{mode="/ {
  if (m == "auto" || index($0, "{mode=\"" m "\"}")) n += $2 } END { print n + 0 }' "$out")
# The async server also releases, at shutdown, the messages of the request
# it had posted on each of its 2 queues for a call that never came.
expected=200
[ "$stream" = nostream ] && expected=202
[ "$calls" -eq "$expected" ] ||
  { echo "calls not counted ($calls):"; grep calls_total "$out"; exit 1; }
echo "smoke ok ($mode, SIG$signal)"
