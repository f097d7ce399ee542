#!/usr/bin/env bash
# The main job, briefly, in three parts, each ending in one table:
# (1) latency: the echo server (123 KiB requests, gRPC's callback API) at a
# light fixed rate, 100 calls/s, from the project's open-loop client
# (bench/capacity/arenarpc_capacity_client: latency from each call's intended
# send time), per mode: plain gRPC, plain with mimalloc preloaded, and
# arenarpc's arena, reuse and auto; p50/p90/p99, server CPU per call and peak
# RSS, medians of 5 interleaved rounds; (2) capacity: the same server stepped
# up by that client to the highest rate each mode sustains at p99 <= 20 ms,
# confirmed on a fresh server, medians of 2 rounds (latency-load curves and
# every column in out/capacity/; bench/capacity/README.md); (3) the corpus of
# real third-party services in-process, every mode against plain parsing
# under glibc, tcmalloc and mimalloc, medians of 3 runs (out/corpus/inprocess.md).
# About 15-19 minutes on 2 cores once built, the longer on cores that other
# work shares (latency ~6 min, capacity ~8 min, corpus ~4 min).
#
#   bash scripts/demo.sh            # the three parts above
#   bash scripts/demo.sh --full     # regenerates docs/: the echo benchmark with ghz
#                                   # (bench/rpc/rpc_bench.py: 5 rounds x (5 s + 20 s) per
#                                   # mode, callback and sync API) and capacity, 8 modes x 3
#                                   # rounds (~21-22 min measured,
#                                   # docs/raw/capacity/load_callback_echo.txt)
# With --full, other flags go to bench/rpc/rpc_bench.py (e.g. --rps=40 --scale=50).
# The full corpus run through gRPC: /usr/bin/python3 bench/corpus/corpus.py.
set -euo pipefail
cd "$(dirname "$0")/.."
full=0
if [[ " $* " == *" --full "* ]]; then full=1; elif (($#)); then
  echo "demo.sh: flags other than --full ($*) go to bench/rpc/rpc_bench.py, which only --full runs" >&2
  exit 2
fi
scripts/deps.sh

cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DARENARPC_BUILD_TESTS=OFF > /dev/null
cmake --build build/release -j "$(nproc)" \
  --target arenarpc_echo_server arenarpc_echo_payload arenarpc_capacity_client

if ((full)); then
  args=(--build build/release)
  /usr/bin/python3 bench/rpc/rpc_bench.py "${args[@]}" "$@"
  /usr/bin/python3 bench/rpc/rpc_bench.py "${args[@]}" --out docs/raw/rpc_sync --server_args=--api=sync \
    --modes=plain,plain+mimalloc,plain+tcmalloc,plain+jemalloc,heap,arena,reuse,auto "$@"
  /usr/bin/python3 bench/capacity/capacity.py --build build/release --targets echo --rounds 3 \
    --out docs/raw/capacity --plot_dir docs
  exit 0
fi

modes=plain,plain+mimalloc,arena,reuse,auto
echo "== 1/3 latency at a light load (the echo server, 100 calls/s) =="
/usr/bin/python3 bench/capacity/capacity.py --build build/release --targets echo --modes "$modes" \
  --light 100 --rounds 5 --step_s 8 --warmup_s 2 --out out/latency
echo
echo "== 2/3 capacity (the echo server, the highest rate at p99 <= 20 ms) =="
# 2 rounds: a capacity that one round fails to confirm (a stall on a fresh
# server) still gets a figure from the other.
/usr/bin/python3 bench/capacity/capacity.py --build build/release --targets echo --modes "$modes" \
  --rounds 2 --step_s 3 --step_warmup_s 1 --bisect 1 --warmup_s 3 --no_half_load --brief \
  --out out/capacity
echo
echo "== 3/3 the corpus of real services, in-process =="
/usr/bin/python3 bench/corpus/corpus.py --quick --rounds 3 --skip-rpc --out out/corpus --docs out/corpus
