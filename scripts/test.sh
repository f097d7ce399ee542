#!/usr/bin/env bash
# The whole test suite: unit tests under ASan+UBSan (Debug, debug checks on),
# then the concurrency tests under TSan (the core, and the gRPC adapters
# without a gRPC runtime: Debian's gRPC is not TSan-instrumented, see
# docs/GRPC.md). Installs what it needs first.
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
