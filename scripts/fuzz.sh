#!/usr/bin/env bash
# The one way to run the libFuzzer harnesses (tests/fuzz/README.md): builds
# them with clang 14, ASan and UBSan into build/fuzz and runs each for $1
# seconds (default 60), one after the other, from the seeds fuzz_seeds
# writes. Fails on a crash, a sanitizer report or a leak. With $2 (a
# directory), each harness's final stats line and executions go to
# $2/fuzz_<harness>.txt.
#   scripts/fuzz.sh 60                          # scripts/test.sh, leg "fuzz"
#   scripts/fuzz.sh 600 docs/raw/reliability    # docs/MEASURE.md, "Reliability"
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
out_dir="${2:-}"
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
CC=clang-14 CXX=clang++-14 cmake -S . -B build/fuzz -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DARENARPC_SANITIZE=address,undefined \
  -DARENARPC_BUILD_FUZZ=ON -DARENARPC_BUILD_GRPC=OFF -DARENARPC_BUILD_TESTS=OFF \
  -DARENARPC_WERROR=ON \
  -DARENARPC_BUILD_BENCH=OFF -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
  -DCMAKE_C_COMPILER_LAUNCHER=ccache >/dev/null
cmake --build build/fuzz -j "${ARENARPC_JOBS:-$(nproc)}" --target fuzz_all
# The harnesses tests/fuzz/CMakeLists.txt declares, one name a line.
mapfile -t harnesses <build/fuzz/tests/fuzz/harnesses.txt
seeds=build/fuzz/seeds
rm -rf "$seeds" && mkdir -p "$seeds"
build/fuzz/tests/fuzz/fuzz_seeds "$seeds"
for h in "${harnesses[@]}"; do
  work="build/fuzz/corpus_$h"  # grows across runs; the seeds stay as given
  mkdir -p "$work"
  log="build/fuzz/fuzz_$h.log"
  echo "fuzz_$h: ${seconds} s"
  rc=0
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "build/fuzz/tests/fuzz/fuzz_$h" -max_total_time="$seconds" -print_final_stats=1 \
    -rss_limit_mb=4096 -max_len=65536 "$work" "$seeds" >"$log" 2>&1 || rc=$?
  # The last status line (#N DONE cov: ft: ...) and the executions.
  summary="$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)"
  execs="$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}' || true)"
  echo "fuzz_$h: rc=$rc executions=${execs:-?} $summary"
  if [ -n "$out_dir" ]; then
    mkdir -p "$out_dir"
    {
      echo "# scripts/fuzz.sh $seconds $out_dir: fuzz_$h, $(date -u +%FT%TZ)"
      echo "# $(clang++-14 --version | head -n 1); $(nproc) cores"
      echo "exit_code: $rc"
      echo "executions: ${execs:-?}"
      echo "last_status: $summary"
      grep -E '^stat::' "$log" || true
    } >"$out_dir/fuzz_$h.txt"
  fi
  if [ "$rc" -ne 0 ] || grep -qE 'Sanitizer|runtime error|parse_fuzzer:' "$log"; then
    echo "fuzz_$h FAILED; the log: $log" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
done
