#!/usr/bin/env bash
# The whole test suite, in legs (ARENARPC_TEST_LEGS picks them; default
# "format tsa asan tsan fuzz modern grpc156"):
# - format: scripts/format.sh --check;
# - tsa: a clang build of the libraries with -Wthread-safety as an error,
#   which checks the ABSL_GUARDED_BY lock rules (builds, runs nothing);
# - asan: every test under ASan+UBSan (Debug, debug checks on), building
#   only what ctest runs (arenarpc_test_targets);
# - tsan: the concurrency tests (the core, and the gRPC adapters without a
#   gRPC runtime: Debian's gRPC is not TSan-instrumented, see
#   docs/MEASURE.md);
# - fuzz: each libFuzzer harness for 60 s (scripts/fuzz.sh);
# - modern: the core against protobuf 35.1 under ASan (below);
# - grpc156: the whole tree in Release with -Werror against gRPC 1.56.2 and
#   protobuf 23.1, and its tests (scripts/grpc_leg.sh). It is also the
#   Release build (gcc -O2 warns about more than -O0: -Wrestrict,
#   -Wmaybe-uninitialized) and runs the glibc-malloc tests a sanitizer
#   build skips;
# - release (opt-in): what a user's Release build compiles against Debian's
#   gRPC, and the glibc-malloc tests.
# Debian's gRPC 1.51 is the release the other legs use. Every build treats
# warnings as errors (ARENARPC_WERROR). The modern and grpc156 legs'
# fixtures, when not cached, build from the start in the background (see
# start_fixture). Installs what it needs first. Each leg prints the seconds
# it took, and the whole run too.
set -euo pipefail
cd "$(dirname "$0")/.."
run_start=$SECONDS
trap 'echo "test.sh: the whole run took $((SECONDS - run_start)) s (exit $?)"' EXIT
scripts/deps.sh

# A run writes about 4.5 GiB of build trees (the sanitizer builds carry
# debug info); a full disk otherwise fails late, mid-link. 6 GiB leaves room.
free_kib=$(df -Pk . | awk 'NR == 2 { print $4 }')
if [ "$free_kib" -lt $((6 * 1024 * 1024)) ]; then
  echo "test.sh: only $((free_kib / 1024)) MiB free here; a cold run needs about 6 GiB" >&2
  exit 1
fi

jobs=$(nproc)
legs=" ${ARENARPC_TEST_LEGS:-format tsa asan tsan fuzz modern grpc156} "
leg() { [[ "$legs" == *" $1 "* ]]; }

# A fixture not yet cached (scripts/*_fixture.sh) builds from the start in
# the background, niced by its script, on the CPU the legs before its own
# leave idle (ctest's waits, each fuzzer's single thread): cold, it is most
# of its leg's time. A cached one returns at once. Its leg waits for it
# (wait_fixture); a run that fails before then leaves it building on, for
# the next run.
declare -A fixture_pid
start_fixture() {  # NAME SCRIPT VARIANT
  mkdir -p build
  "scripts/$2" "$3" > "build/fixture_$1.out" 2> "build/fixture_$1.log" &
  fixture_pid[$1]=$!
}
# wait_fixture NAME: its log on stderr; sets fixture_prefix, or returns the
# script's exit code (3: the sources could not be fetched).
wait_fixture() {
  local rc=0
  wait "${fixture_pid[$1]}" || rc=$?
  cat "build/fixture_$1.log" >&2
  [ "$rc" -eq 0 ] || return "$rc"
  fixture_prefix="$(tail -n 1 "build/fixture_$1.out")"
}
if leg modern && [ -z "${ARENARPC_PROTOBUF_PREFIX:-}" ]; then
  start_fixture modern protobuf_fixture.sh asan
fi
if leg grpc156; then
  start_fixture grpc156 grpc_fixture.sh release
fi

if leg format; then
  leg_start=$SECONDS
  scripts/format.sh --check
  echo "test.sh: the format leg took $((SECONDS - leg_start)) s"
fi

# ccache keeps warm runs of every leg short (its cache next to the
# protobuf fixture's; clones at other paths share it through
# CCACHE_BASEDIR).
use_ccache() {
  local cache_dir="${ARENARPC_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/arenarpc}"
  export CCACHE_DIR="$cache_dir/ccache" CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
  export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-2G}"
}

# Clang's thread-safety analysis (gcc has none) over the annotated code: the
# core, the gRPC adapters, and the echo server, which instantiates the
# adapters' header templates. -fsized-deallocation: clang 14 leaves it off.
if leg tsa; then
  leg_start=$SECONDS
  (
  use_ccache
  cmake -S . -B build/tsa -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_COMPILER=clang++-14 -DARENARPC_BUILD_TESTS=OFF -DARENARPC_WERROR=ON \
    -DARENARPC_BUILD_BENCH=OFF -DARENARPC_BUILD_TOOLS=ON \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    "-DCMAKE_CXX_FLAGS=-fsized-deallocation -Wthread-safety -Werror=thread-safety"
  cmake --build build/tsa -j "$jobs" \
    --target arenarpc arenarpc_grpc arenarpc_echo_server
  )
  echo "test.sh: the tsa leg took $((SECONDS - leg_start)) s"
fi

if leg release; then
  leg_start=$SECONDS
  (
  use_ccache
  cmake -S . -B build/release-werror -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DARENARPC_WERROR=ON -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache
  # Everything but the tests (the ASan leg builds those), and the one
  # test binary this leg runs: TuneGlibcMalloc's tests observe glibc's
  # malloc, which a sanitizer replaces (they skip there): they run here,
  # with glibc's and with jemalloc preloaded.
  cmake --build build/release-werror -j "$jobs" \
    --target arenarpc_user_targets malloc_tuning_test
  cd build/release-werror && ctest -R 'MallocTuning|malloc_tuning' --output-on-failure
  )
  echo "test.sh: the release leg took $((SECONDS - leg_start)) s"
fi

if leg asan; then
leg_start=$SECONDS
use_ccache
# Line tables only (-g1, here and in the modern leg): all a sanitizer's
# report needs; full -g took a tenth more compile time (a gRPC test: 22.2
# against 20.3 CPU-s) and a quarter more object size.
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 \
  -DARENARPC_SANITIZE=address,undefined -DARENARPC_WERROR=ON \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache
# What ctest runs: the benchmarks no smoke test runs are the grpc156 leg's.
cmake --build build/asan -j "$jobs" --target arenarpc_test_targets
(cd build/asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j "$jobs")
echo "test.sh: the asan leg took $((SECONDS - leg_start)) s"
fi

if leg tsan; then
leg_start=$SECONDS
use_ccache
cmake -S . -B build/tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DARENARPC_SANITIZE=thread -DARENARPC_BUILD_BENCH=OFF -DARENARPC_WERROR=ON \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache
# TSan needs a narrow mmap layout on kernels with high ASLR entropy; the
# build runs TSan binaries too (protoc-gen-arenarpc, gtest discovery).
# Only the concurrency tests' executables: the leg runs nothing else.
setarch "$(uname -m)" -R cmake --build build/tsan -j "$jobs" \
  --target arenarpc_concurrency_tests
(cd build/tsan && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  setarch "$(uname -m)" -R ctest -L concurrency --output-on-failure -j "$jobs")
echo "test.sh: the tsan leg took $((SECONDS - leg_start)) s"
fi
if leg fuzz; then
  leg_start=$SECONDS
  ARENARPC_JOBS="$jobs" scripts/fuzz.sh 60
  echo "test.sh: the fuzz leg took $((SECONDS - leg_start)) s"
fi

# Legs in a function of their own return early (a SKIPPED leg).
modern_leg() {

# The core against a modern protobuf (docs/PROTOBUF_VERSIONS.md), under
# ASan, without the gRPC adapters (Debian's gRPC is built with 3.21).
# The protobuf: ARENARPC_PROTOBUF_PREFIX if set (an install prefix with
# lib/cmake/protobuf, built with -fsanitize=address; ARENARPC_PROTOC may name
# a protoc of the same version if it has none), else abseil + protobuf 35.1
# built with ASan, protoc and libprotoc included, by
# scripts/protobuf_fixture.sh from the grpcio-tools sdist (pip, pinned,
# sha256-checked) into a cache keyed by its hash. With libprotoc there, the
# plugin is built and its editions test runs (tests/plugin_editions.cmake).
modern_prefix="${ARENARPC_PROTOBUF_PREFIX:-}"
modern_protoc="${ARENARPC_PROTOC:-}"
if [ -z "$modern_prefix" ]; then
  rc=0
  wait_fixture modern || rc=$?
  if [ "$rc" -eq 3 ]; then
    echo "SKIPPED: the core against a modern protobuf (pip could not fetch" \
         "the sources; set ARENARPC_PROTOBUF_PREFIX, docs/PROTOBUF_VERSIONS.md)"
    return 0
  elif [ "$rc" -ne 0 ]; then
    return "$rc"
  fi
  modern_prefix="$fixture_prefix"
fi
use_ccache
# A new fixture key is a new prefix: forget the cached package paths.
rm -f build/asan-modern/CMakeCache.txt
# gtest discovery runs the tests' binaries during the build.
# ASan only: gcc 12 rejects abseil 20250512's constexpr function-pointer
# comparisons (hash_policy_traits.h) under -fsanitize=undefined.
ASAN_OPTIONS=detect_leaks=0 cmake -S . -B build/asan-modern -G Ninja \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 \
  -DARENARPC_SANITIZE=address -DARENARPC_WERROR=ON \
  -DARENARPC_BUILD_GRPC=OFF -DCMAKE_PREFIX_PATH="$modern_prefix" \
  -DARENARPC_PROTOC="$modern_protoc" -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
  -DCMAKE_C_COMPILER_LAUNCHER=ccache
ASAN_OPTIONS=detect_leaks=0 cmake --build build/asan-modern -j "$jobs" \
  --target arenarpc_test_targets
# detect_container_overflow=0: protobuf 35.1's RepeatedField copy constructor
# annotates its inline storage twice (once in the constructor it delegates
# to), and gcc 12's ASan runtime CHECK-fails on the second one; a plain heap
# copy of a RepeatedField<int64_t>, no arenarpc code, aborts the same way
# (docs/raw/protobuf_35_asan_annotation.txt). Other ASan checks stay on.
(cd build/asan-modern &&
  ASAN_OPTIONS=detect_leaks=1:detect_container_overflow=0 \
  ctest --output-on-failure -j "$jobs")
# The fixture has libprotoc: the plugin's editions test must have been there.
if [ -z "${ARENARPC_PROTOBUF_PREFIX:-}" ] &&
   ! (cd build/asan-modern && ctest -N -R '^plugin_refuses_editions$' | grep -q 'Total Tests: 1'); then
  echo "test.sh: plugin_refuses_editions is missing from the modern leg" >&2
  return 1
fi
}
if leg modern; then
  leg_start=$SECONDS
  modern_leg
  echo "test.sh: the modern-protobuf leg took $((SECONDS - leg_start)) s"
fi

# The adapters against gRPC 1.56.2 (scripts/grpc_leg.sh; its fixture,
# scripts/grpc_fixture.sh, fetches its sources with cargo and pip).
if leg grpc156; then
  leg_start=$SECONDS
  rc=0
  wait_fixture grpc156 || rc=$?
  if [ "$rc" -eq 3 ]; then
    echo "SKIPPED: the gRPC 1.56.2 leg (cargo or pip could not fetch the" \
         "fixture's sources; scripts/grpc_fixture.sh)"
  elif [ "$rc" -ne 0 ]; then
    exit "$rc"
  else
    ARENARPC_JOBS="$jobs" bash scripts/grpc_leg.sh
  fi
  echo "test.sh: the grpc156 leg took $((SECONDS - leg_start)) s"
fi
