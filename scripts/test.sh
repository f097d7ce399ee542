#!/usr/bin/env bash
# The whole test suite: unit tests under ASan+UBSan (Debug, debug checks on),
# then the concurrency tests under TSan (the core, and the gRPC adapters
# without a gRPC runtime: Debian's gRPC is not TSan-instrumented, see
# docs/GRPC.md), then the core against protobuf 33.6 under ASan+UBSan (see
# the end; skipped, and said so, without the sources). Installs what it
# needs first.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh

jobs=$(nproc)

cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DARENARPC_SANITIZE=address,undefined
cmake --build build/asan -j "$jobs"
(cd build/asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j "$jobs")

cmake -S . -B build/tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DARENARPC_SANITIZE=thread -DARENARPC_BUILD_BENCH=OFF
# TSan needs a narrow mmap layout on kernels with high ASLR entropy; the
# build runs TSan binaries too (protoc-gen-arenarpc, gtest discovery).
setarch "$(uname -m)" -R cmake --build build/tsan -j "$jobs"
(cd build/tsan && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  setarch "$(uname -m)" -R ctest -L concurrency --output-on-failure -j "$jobs")

# The core against a modern protobuf (docs/PROTOBUF_VERSIONS.md), under
# ASan+UBSan, without the gRPC adapters (Debian's gRPC is built with 3.21).
# The protobuf: ARENARPC_PROTOBUF_PREFIX if set (an install prefix with
# lib/cmake/protobuf, built with -fsanitize=address), else protobuf + abseil
# built by scripts/protobuf_fixture.sh from ARENARPC_THIRD_PARTY (default:
# ../shared/third_party) into a cache keyed by the tarballs' hashes.
modern_prefix="${ARENARPC_PROTOBUF_PREFIX:-}"
if [ -z "$modern_prefix" ]; then
  rc=0
  modern_prefix="$(scripts/protobuf_fixture.sh asan)" || rc=$?
  if [ "$rc" -eq 3 ]; then
    echo "SKIPPED: the core against a modern protobuf (no sources; set" \
         "ARENARPC_THIRD_PARTY or ARENARPC_PROTOBUF_PREFIX, docs/PROTOBUF_VERSIONS.md)"
    exit 0
  elif [ "$rc" -ne 0 ]; then
    exit "$rc"
  fi
fi
# protoc and gtest discovery run during the build; protoc's exit-time leaks
# under ASan are not ours.
ASAN_OPTIONS=detect_leaks=0 cmake -S . -B build/asan-modern -G Ninja \
  -DCMAKE_BUILD_TYPE=Debug -DARENARPC_SANITIZE=address,undefined \
  -DARENARPC_BUILD_GRPC=OFF -DCMAKE_PREFIX_PATH="$modern_prefix"
ASAN_OPTIONS=detect_leaks=0 cmake --build build/asan-modern -j "$jobs"
(cd build/asan-modern && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j "$jobs")
