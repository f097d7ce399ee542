#!/usr/bin/env bash
# Soak (docs/MEASURE.md, "Reliability"): each mode's echo server as shipped,
# 10 minutes at a fixed rate with skewed sizes; RSS flat after warm-up, zero
# errors, p99 first vs last minute, RSS plot. Builds Release first.
# Usage: soak.sh [minutes (default 10)]   writes docs/raw/reliability/soak*.txt
set -euo pipefail
cd "$(dirname "$0")/../.."
minutes="${1:-10}"
export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j2 --target arenarpc_echo_server arenarpc_reliability_load >/dev/null
/usr/bin/python3 bench/reliability/serve_load.py soak --minutes="$minutes" --rps=100 \
  --deadline_ms=10000 --warmup_s=60
