#!/usr/bin/env bash
# The whole test suite: first the format check (scripts/format.sh
# --check), then a clang build of the libraries with
# -Wthread-safety as an error, which checks the ABSL_GUARDED_BY lock rules
# (the tsa leg: builds, runs nothing), then unit tests under ASan+UBSan
# (Debug, debug checks on), then the concurrency tests under TSan (the core,
# and the gRPC adapters without a gRPC runtime: Debian's gRPC is not
# TSan-instrumented, see docs/MEASURE.md), then the core against protobuf 35.1
# under ASan (see the end; skipped, and said so, when pip cannot fetch its
# sources).
# Installs what it needs first. The release leg builds what a user's
# Release build does (library, tools, examples, benchmarks; gcc -O2 warns
# about more than -O0: -Wrestrict, -Wmaybe-uninitialized), with -Werror;
# it builds and runs only the glibc-malloc tests (which a sanitizer build
# skips); through ccache a warm run costs little. Then the fuzz leg: each libFuzzer harness
# for 60 s (scripts/fuzz.sh). Every build treats warnings as errors
# (ARENARPC_WERROR). The grpc156-record leg, first as it takes a second,
# checks that the gRPC 1.56.2 leg's kept output is this tree's
# (scripts/grpc_leg.sh: too long cold for CI, run by hand on every change to
# the adapters' gRPC side; the opt-in grpc156 leg runs it). ARENARPC_TEST_LEGS
# picks legs (default
# "grpc156-record format tsa release asan tsan fuzz modern").
# Each leg prints the seconds it took, and the whole run too.
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
legs=" ${ARENARPC_TEST_LEGS:-grpc156-record format tsa release asan tsan fuzz modern} "
leg() { [[ "$legs" == *" $1 "* ]]; }

# First, as it takes a second: a change to src/grpc or
# include/arenarpc/grpc needs the gRPC 1.56.2 leg run again on it.
if leg grpc156-record; then
  bash scripts/grpc_leg.sh --check
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
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DARENARPC_SANITIZE=address,undefined -DARENARPC_WERROR=ON \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache
cmake --build build/asan -j "$jobs"
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

# Opt-in (ARENARPC_TEST_LEGS=grpc156): the adapters against gRPC 1.56.2,
# refreshing docs/raw/grpc_versions/grpc156.txt.
if leg grpc156; then
  leg_start=$SECONDS
  bash scripts/grpc_leg.sh
  echo "test.sh: the grpc156 leg took $((SECONDS - leg_start)) s"
fi

leg modern || exit 0

# The core against a modern protobuf (docs/PROTOBUF_VERSIONS.md), under
# ASan, without the gRPC adapters (Debian's gRPC is built with 3.21).
# The protobuf: ARENARPC_PROTOBUF_PREFIX if set (an install prefix with
# lib/cmake/protobuf, built with -fsanitize=address; ARENARPC_PROTOC may name
# a protoc of the same version if it has none), else abseil + protobuf 35.1
# built with ASan, protoc and libprotoc included, by
# scripts/protobuf_fixture.sh from the grpcio-tools sdist (pip, pinned,
# sha256-checked) into a cache keyed by its hash. With libprotoc there, the
# plugin is built and its editions test runs (tests/plugin_editions.cmake).
leg_start=$SECONDS
modern_prefix="${ARENARPC_PROTOBUF_PREFIX:-}"
modern_protoc="${ARENARPC_PROTOC:-}"
if [ -z "$modern_prefix" ]; then
  rc=0
  modern_prefix="$(scripts/protobuf_fixture.sh asan)" || rc=$?
  if [ "$rc" -eq 3 ]; then
    echo "SKIPPED: the core against a modern protobuf (pip could not fetch" \
         "the sources; set ARENARPC_PROTOBUF_PREFIX, docs/PROTOBUF_VERSIONS.md)"
    exit 0
  elif [ "$rc" -ne 0 ]; then
    exit "$rc"
  fi
fi
use_ccache
# A new fixture key is a new prefix: forget the cached package paths.
rm -f build/asan-modern/CMakeCache.txt
# gtest discovery runs the tests' binaries during the build.
# ASan only: gcc 12 rejects abseil 20250512's constexpr function-pointer
# comparisons (hash_policy_traits.h) under -fsanitize=undefined.
ASAN_OPTIONS=detect_leaks=0 cmake -S . -B build/asan-modern -G Ninja \
  -DCMAKE_BUILD_TYPE=Debug -DARENARPC_SANITIZE=address -DARENARPC_WERROR=ON \
  -DARENARPC_BUILD_GRPC=OFF -DCMAKE_PREFIX_PATH="$modern_prefix" \
  -DARENARPC_PROTOC="$modern_protoc" -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
  -DCMAKE_C_COMPILER_LAUNCHER=ccache
ASAN_OPTIONS=detect_leaks=0 cmake --build build/asan-modern -j "$jobs"
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
  exit 1
fi
echo "test.sh: the modern-protobuf leg took $((SECONDS - leg_start)) s"
