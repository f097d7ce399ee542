# Sourced by the server smoke tests: wait_for_port PID OUT ERR sets `port`
# once the server started as PID prints "listening on N" to OUT, or exits 1
# (showing ERR) if it dies or does not listen within 60 s (sanitized builds
# start slowly).
wait_for_port() {
  local pid=$1 out=$2 err=$3
  port=
  for _ in $(seq 1 600); do
    port=$(sed -n 's/^listening on \([0-9][0-9]*\)$/\1/p' "$out")
    [ -n "$port" ] && return 0
    kill -0 "$pid" 2>/dev/null || { cat "$err"; echo "server died"; exit 1; }
    sleep 0.1
  done
  kill "$pid"
  echo "server did not listen"
  exit 1
}
