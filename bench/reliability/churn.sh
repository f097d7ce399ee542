#!/usr/bin/env bash
# Thread churn (docs/OPERATE.md, "Threads and plugins"): 1,000 short-lived threads
# per wave using arenas, message pools and object pools, 10 waves; then 40
# waves to show where RSS levels off. Builds Release first. Writes
# docs/raw/reliability/churn.txt. Exit status: the 10-wave run's verdict.
set -euo pipefail
cd "$(dirname "$0")/../.."
export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j2 --target arenarpc_churn_bench >/dev/null
out=docs/raw/reliability/churn.txt
mkdir -p "$(dirname "$out")"
bin=build/release/bench/arenarpc_churn_bench
rc=0
{
  echo "# $bin --threads=1000 --waves=10"
  "$bin" --threads=1000 --waves=10 || rc=$?
  echo
  echo "# $bin --threads=1000 --waves=40 (RSS every 5th wave, and the summary)"
  "$bin" --threads=1000 --waves=40 | awk '/^summary/ { print; next } /^wave/ { n++; if (n % 5) next } { print $1, $2, $3, $4, $5, $6, $7 }' || true
} > "$out"
cat "$out" | cut -c1-200
exit "$rc"
