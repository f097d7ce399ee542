#!/usr/bin/env bash
# Overload (docs/OPERATE.md, "Overload"): each mode's echo server as
# shipped; its capacity measured (10 s closed loop), then 60 s at 3x that
# with skewed sizes and 1 s deadlines, then 30 s idle. Builds Release first.
# Writes docs/raw/reliability/overload*.txt, docs/reliability_overload_rss.png.
set -euo pipefail
cd "$(dirname "$0")/../.."
export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j2 --target arenarpc_echo_server arenarpc_reliability_load >/dev/null
/usr/bin/python3 bench/reliability/serve_load.py overload "$@"
