// Internal: the counters the gRPC allocators' templates (allocators.h) feed
// and stats.h reads, and the registry of pools they trim. Defined in
// src/grpc/stats.cc and src/grpc/idle_trim.cc. Not a public API.
//
// Thread safety: every function may be called from any thread at any time.
// Lifetime: a registered pool must never be destroyed.
#ifndef ARENARPC_GRPC_INTERNAL_COUNTERS_H_
#define ARENARPC_GRPC_INTERNAL_COUNTERS_H_

#include <chrono>
#include <cstdint>

#include "arenarpc/allocation_mode.h"

namespace arenarpc::internal {

// A call's holder was made, released, or its request freed early.
void RecordAllocate(AllocationMode mode);
void RecordRelease(AllocationMode mode, uint64_t arena_bytes);
void RecordFreeRequest(AllocationMode mode);

// Makes `pool` trimmed by idle trimming and the pooled-memory cap: `trim`
// gets how long a thread's cached instances must have gone unused to be
// freed (MessagePool::ReleaseIdleCaches).
void RegisterMessagePoolTrim(void (*trim)(void*, std::chrono::milliseconds),
                             void* pool);
// Tests that started no trimming thread (SetBackgroundThreadStarterForTesting):
// one pass of it at `now`, here. True if it trimmed for the cap.
bool IdleTrimTickForTesting(std::chrono::steady_clock::time_point now);

// True if the pooled-memory cap is set and exceeded now (then also asks
// the trimming thread to trim the depots); counts the fallback call.
bool OverPooledCap();
uint64_t OverCapHeapCalls();
// Gives back the pooled arenas and page caches of threads unused for
// `idle_for` (0: every thread's idle ones), then the page pool's depot
// (idle trimming, kAuto's memory releases). Thread-safe.
void ReleaseIdleArenasAndPages(std::chrono::milliseconds idle_for);
uint64_t IdleTrims();
uint64_t CapTrims();

}  // namespace arenarpc::internal

#endif  // ARENARPC_GRPC_INTERNAL_COUNTERS_H_
