#!/usr/bin/env bash
# The streaming example end to end on 127.0.0.1: starts
# arenarpc_bulk_stream_server --port=0 --mode=MODE, waits for "listening on
# N", runs the client through every streaming kind (Export: server-, Import:
# client-, Sync: bidi-streaming; each checks its batches), stops the server
# with SIGTERM and checks:
#   - the install report on stderr names the three methods in MODE ("none":
#     the plain line, and no method installed);
#   - the stats the server prints count every streamed message on
#     StreamMessages: per stream of B batches, Export hands out B, Import
#     B + 1 (the last Next() is the Read that sees the end), Sync B + 1
#     requests and B responses: 4 B + 2 in all (0 for "none").
# usage: bulk_stream_smoke.sh SERVER CLIENT MODE
set -euo pipefail
server=$1 client=$2 mode=$3
batches=5
out=$(mktemp) err=$(mktemp) cout=$(mktemp)
trap 'rm -f "$out" "$err" "$cout"' EXIT
source "$(dirname "$0")/wait_for_port.sh"
fail() { echo "FAIL ($mode): $*"; echo "--- server stderr"; cat "$err"; exit 1; }

"$server" --port=0 --mode="$mode" >"$out" 2>"$err" &
pid=$!
wait_for_port "$pid" "$out" "$err"

rc=0
"$client" --target="127.0.0.1:$port" --batches="$batches" --scale=20 \
  >"$cout" || rc=$?
kill -TERM "$pid"
wait "$pid" || fail "server exit status $?"
cat "$cout"
[ "$rc" -eq 0 ] || fail "client failed: $rc"
for m in export import sync; do
  grep -qx "$m: $batches batches" "$cout" || fail "client: no clean $m"
done

# The install report.
if [ "$mode" = none ]; then
  grep -qx 'mode none (plain gRPC messages)' "$err" || fail "no plain line"
  ! grep -q '^arenarpc_grpc_method_mode' "$out" || fail "a method installed"
else
  want="arenarpc.bulk.BulkService: 3 streaming methods served ("
  want+="arenarpc.bulk.BulkService/Export: sync, $mode; "
  want+="arenarpc.bulk.BulkService/Import: sync, $mode; "
  want+="arenarpc.bulk.BulkService/Sync: sync, $mode)"
  grep -qxF "$want" "$err" || fail "install report is not: $want"
  for m in Export Import Sync; do
    grep -q "^arenarpc_grpc_method_mode{method=\"arenarpc.bulk.BulkService/$m\"" \
      "$out" || fail "stats do not list $m"
  done
fi

# Every streamed message on StreamMessages, in MODE (auto: any mode).
messages=$(awk -v m="$mode" '/^arenarpc_grpc_streaming_messages_total\{mode="/ {
  if (m == "auto" || index($0, "{mode=\"" m "\"}")) n += $2 } END { print n + 0 }' "$out")
expected=$((4 * batches + 2))
[ "$mode" = none ] && expected=0
[ "$messages" -eq "$expected" ] ||
  fail "streamed messages $messages, expected $expected: $(grep streaming_messages_total "$out")"
live=$(awk '/^arenarpc_grpc_streaming_live_messages / { print $2 }' "$out")
[ "$live" = 0 ] || fail "live messages at exit: $live"
echo "bulk stream smoke ok ($mode)"
