#!/usr/bin/env bash
# The main job, briefly: (1) the babylon RPC experiment on gRPC: the echo
# server driven by ghz at a fixed rate with no allocator (plain gRPC) and in
# each allocation mode (heap, arena, reuse, auto), table printed, plots in
# out/rpc/; then the same on gRPC's sync API (the echo service as a
# Svc::Service), against plain sync gRPC and plain sync with mimalloc,
# tcmalloc and jemalloc preloaded, in out/rpc_sync/; (2) capacity: the echo
# server stepped by an open-loop client to the highest rate each mode
# sustains at a p99 objective, table printed, latency-load curves in
# out/capacity/ (bench/capacity/README.md); (3) the corpus of real
# third-party services in-process, every mode against plain parsing under
# glibc, tcmalloc and mimalloc (table in out/corpus/inprocess.md). About 15 minutes on 2 busy cores once built
# (measured 2026-11-25: echo callback ~3 min, echo sync ~5 min, corpus in-process the rest;
# capacity's short run, 5 modes x 1 round of 3 s steps: 3 min 22 s, timed 2026-11-28,
# docs/raw/capacity/quick_timed/time.txt).
# The full corpus run through gRPC: /usr/bin/python3 bench/corpus/corpus.py.
#
#   bash scripts/demo.sh            # short runs
#   bash scripts/demo.sh --full     # echo: 5 rounds x (5 s + 20 s) per mode, regenerates docs/;
#                                   # capacity: 8 modes x 3 rounds (~21-22 min measured,
#                                   # docs/raw/capacity/load_callback_echo.txt)
# Other flags go to bench/rpc/rpc_bench.py (e.g. --rps=40 --scale=50).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh

cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DARENARPC_BUILD_TESTS=OFF > /dev/null
cmake --build build/release -j "$(nproc)" \
  --target arenarpc_echo_server arenarpc_echo_payload arenarpc_capacity_client

args=(--build build/release)
if [[ " $* " != *" --full "* ]]; then args+=(--duration=12 --warmup=3 --rounds=2); fi
/usr/bin/python3 bench/rpc/rpc_bench.py "${args[@]}" "$@"
sync_out=(--out out/rpc_sync)
if [[ " $* " == *" --full "* ]]; then sync_out=(--out docs/raw/rpc_sync); fi
/usr/bin/python3 bench/rpc/rpc_bench.py "${args[@]}" "${sync_out[@]}" --server_args=--api=sync \
  --modes=plain,plain+mimalloc,plain+tcmalloc,plain+jemalloc,heap,arena,reuse,auto "$@"
cap_args=(--targets echo --quick --modes plain,plain+mimalloc,arena,reuse,auto --out out/capacity)
if [[ " $* " == *" --full "* ]]; then
  cap_args=(--targets echo --rounds 3 --out docs/raw/capacity --plot_dir docs)
fi
/usr/bin/python3 bench/capacity/capacity.py --build build/release "${cap_args[@]}"
if [[ " $* " != *" --full "* ]]; then
  /usr/bin/python3 bench/corpus/corpus.py --quick --skip-rpc --out out/corpus --docs out/corpus
fi
