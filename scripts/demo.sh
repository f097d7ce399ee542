#!/usr/bin/env bash
# The main job: the babylon RPC experiment on gRPC, briefly. Builds the echo
# server (Release), then drives it with ghz at a fixed rate in each
# allocation mode (heap, arena, reuse) and prints the comparison table;
# plots go to out/rpc/. About 3 minutes on 2 cores from a clean tree.
#
#   bash scripts/demo.sh            # short run: 2 interleaved rounds x (3 s warm-up + 12 s) per mode
#   bash scripts/demo.sh --full     # 5 rounds x (5 s + 20 s) per mode, regenerates docs/
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
exec /usr/bin/python3 bench/rpc_bench.py "${args[@]}" "$@"
