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
#include <string>

#include "arenarpc/allocation_mode.h"
#include "arenarpc/message_pool.h"
#include "arenarpc/metrics.h"

namespace arenarpc::internal {

// A call's holder was made, released, or its request freed early.
void RecordAllocate(AllocationMode mode);
void RecordRelease(AllocationMode mode, uint64_t arena_bytes);
void RecordFreeRequest(AllocationMode mode);

// RegisterMessagePool (the stats registry) is the core's: arenarpc/metrics.h.
// Makes `pool` trimmed by idle trimming and the pooled-memory cap: `trim`
// gets how long a thread's cached instances must have gone unused to be
// freed (MessagePool::ReleaseIdleCaches).
void RegisterMessagePoolTrim(void (*trim)(void*, std::chrono::milliseconds),
                             void* pool);
// Tests: one pass of the trimming thread at `now` (src/grpc/idle_trim.cc),
// on the calling thread; for tests that started no trimming thread
// (SetBackgroundThreadStarterForTesting). True if it trimmed for the cap.
bool IdleTrimTickForTesting(std::chrono::steady_clock::time_point now);

// A handler's word to the allocator it calls next on the same thread, for
// kAuto's real-call learning (kRealCalls):
//  - >= 0: a sync call, its request's wire bytes (the sync handler sets it
//    around AllocateMessages). A sync call runs from AllocateMessages to the
//    holder's Release on that one thread.
//  - kCallBytesAtRelease (the value outside any window): gRPC's callback
//    handler, which gives no word. It parses right after AllocateMessages
//    and often runs the handler and Release on the same thread; the
//    request's bytes are taken at Release (timed calls only; or the
//    method's known size, src/grpc/request_sizes.h).
//  - kCallNotTimed: a call no window covers (never timed).
//  - kCallAsync: an async CallMessages (arenarpc/grpc/async.h), taken
//    before its call exists: a trial is handed to it (MeteredMessageAllocator
//    ::AllocateAsync), and its window is opened and closed by the user's
//    lines (arenarpc::NextTag, CallMessages::Arrived/Answered).
inline constexpr double kCallBytesAtRelease = -1;
inline constexpr double kCallNotTimed = -2;
inline constexpr double kCallAsync = -3;
inline constinit thread_local double next_call_request_bytes =
    kCallBytesAtRelease;

// True if the pooled-memory cap is set and exceeded now (then also asks
// the trimming thread to trim the depots); counts the fallback call.
bool OverPooledCap();
uint64_t OverCapHeapCalls();
// Gives back the pooled arenas and page caches of threads unused for
// `idle_for` (0: every thread's idle ones), then the page pool's depot: the
// pages freed land in the calling thread's cache first, which is flushed.
// Idle trimming and kAuto's memory releases (src/grpc/auto_memory.h) share
// it. Thread-safe.
void ReleaseIdleArenasAndPages(std::chrono::milliseconds idle_for);
uint64_t IdleTrims();
uint64_t CapTrims();

}  // namespace arenarpc::internal

#endif  // ARENARPC_GRPC_INTERNAL_COUNTERS_H_
