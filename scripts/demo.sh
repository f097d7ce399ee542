#!/usr/bin/env bash
# The main job, briefly: (1) the babylon RPC experiment on gRPC: the echo
# server driven by ghz at a fixed rate with no allocator (plain gRPC) and in
# each allocation mode (heap, arena, reuse, auto), table printed, plots in
# out/rpc/; (2) the corpus of real third-party services in-process, every
# mode against plain parsing under glibc, tcmalloc and mimalloc (table in
# out/corpus/inprocess.md). About 10 minutes on 2 cores from a clean tree (estimate: echo ~2 min, corpus build and quick run the rest).
# The full corpus run through gRPC: /usr/bin/python3 bench/corpus.py.
#
#   bash scripts/demo.sh            # short runs
#   bash scripts/demo.sh --full     # echo: 5 rounds x (5 s + 20 s) per mode, regenerates docs/
# Other flags go to bench/rpc_bench.py (e.g. --rps=40 --scale=50).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh

cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DARENARPC_BUILD_TESTS=OFF > /dev/null
cmake --build build/release -j "$(nproc)" \
  --target arenarpc_echo_server arenarpc_echo_payload

args=(--build build/release)
if [[ " $* " != *" --full "* ]]; then args+=(--duration=12 --warmup=3 --rounds=2); fi
/usr/bin/python3 bench/rpc_bench.py "${args[@]}" "$@"
if [[ " $* " != *" --full "* ]]; then
  /usr/bin/python3 bench/corpus.py --quick --skip-rpc --out out/corpus --docs out/corpus
fi
