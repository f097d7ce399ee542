// Stats of arenarpc's gRPC adapters, and every arenarpc stat as Prometheus
// text.
//
//   arenarpc::GrpcStats s = arenarpc::GetGrpcStats();
//   const arenarpc::GrpcModeStats& arena =
//       s.modes[int(arenarpc::AllocationMode::kArena)];
//   uint64_t arena_calls = arena.calls;
//   uint64_t p99 = arena.arena_bytes_p99;
//
//   // e.g. behind an HTTP /metrics handler:
//   std::string text = arenarpc::RenderPrometheusStats();
//
//   // Make an application's own MessagePool visible there too:
//   static arenarpc::MessagePool<MyDoc> docs;
//   arenarpc::RegisterMessagePoolStats("my.Doc", &docs);
//
// RenderPrometheusStats() renders (text exposition format 0.0.4):
//   arenarpc_page_pool_*, arenarpc_arena_*, arenarpc_message_pool_*,
//   arenarpc_object_pool_*    PrometheusText() (arenarpc/metrics.h)
//   arenarpc_grpc_stream_*    StreamArenas: all streams summed
//   arenarpc_grpc_method_mode  per served method: 1 with labels method,
//                             api="sync|callback", installed= and mode=
//                             (the mode its calls run in now)
//   arenarpc_grpc_*           calls per mode (label mode="heap|arena|reuse";
//                             kAuto's calls count under the mode they ran in),
//                             calls in flight, FreeRequest() calls, and the
//                             histogram of arena bytes per kArena call, and
//                             kAuto's choice and measured costs per method
//                             (arenarpc_grpc_auto_*, label method="..."),
//                             and shadow measurement's costs, recommended
//                             mode and estimated saving per method
//                             (arenarpc_grpc_shadow_*); kAuto's decision
//                             per method and where it came from:
//                             arenarpc_grpc_auto_decision{method, mode,
//                             source="learned|prior|loaded|none"} 1;
//                             calls answered unhandled, nobody waiting:
//                             arenarpc_grpc_shed_calls_total{method,
//                             reason="deadline"}.
//
// Thread safety: everything here may be called from any thread at any time.
// Counters are read without stopping writers, so a snapshot taken under load
// may be off by the calls in progress.
// Lifetime: a registered pool must never be destroyed (register pools with
// static storage duration or leaked ones).
#ifndef ARENARPC_GRPC_STATS_H_
#define ARENARPC_GRPC_STATS_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "arenarpc/grpc/install_result.h"
#include "arenarpc/grpc/internal/counters.h"
#include "arenarpc/grpc/kill_switch.h"
#include "arenarpc/message_pool.h"
#include "arenarpc/metrics.h"  // GetMessagePoolStats, RegisterMessagePoolStats
#include "arenarpc/mode_chooser.h"  // DecisionSource

namespace arenarpc {

// Bucket i of the arena-bytes histogram counts calls with bytes <=
// kArenaBytesBucketBounds[i] (and above the previous bound); the last bucket
// is +Inf.
inline constexpr int kArenaBytesBuckets = 16;
inline constexpr std::array<uint64_t, kArenaBytesBuckets - 1>
    kArenaBytesBucketBounds = {
        uint64_t{1} << 12, uint64_t{1} << 13, uint64_t{1} << 14,
        uint64_t{1} << 15, uint64_t{1} << 16, uint64_t{1} << 17,
        uint64_t{1} << 18, uint64_t{1} << 19, uint64_t{1} << 20,
        uint64_t{1} << 21, uint64_t{1} << 22, uint64_t{1} << 23,
        uint64_t{1} << 24, uint64_t{1} << 25, uint64_t{1} << 26};

struct GrpcModeStats {
  uint64_t calls = 0;               // holders released (calls completed)
  uint64_t in_flight = 0;           // holders allocated, not yet released
  uint64_t free_request_calls = 0;  // FreeRequest() that freed a request
  // kArena only: bytes of both arenas of a call, at its end.
  uint64_t arena_bytes_sum = 0;
  std::array<uint64_t, kArenaBytesBuckets> arena_bytes_buckets = {};
  // Upper bounds of the buckets holding these percentiles (0 if no calls).
  uint64_t arena_bytes_p50 = 0;
  uint64_t arena_bytes_p90 = 0;
  uint64_t arena_bytes_p99 = 0;
};

// A measured method (kAuto, or shadow measurement): the costs per mode
// (parse + destroy of request and response, measured on sampled calls off
// the request path, smoothed), the mode running and the one that would be
// cheaper.
struct MeasuredMethodStats {
  std::string method;      // "pkg.Service/Method", or "pkg.Req -> pkg.Resp"
  bool automatic = false;  // kAuto: `mode` follows `recommended`
  AllocationMode mode = AllocationMode::kArena;          // calls run in it now
  AllocationMode recommended = AllocationMode::kArena;   // surely cheapest
  std::array<double, kNumAllocationModes> cost_us = {};  // by AllocationMode
  // Estimated CPU saved per call by switching to `recommended`:
  // cost_us[mode] - cost_us[recommended] (0 for kAuto, which switched).
  double saving_us = 0;
  uint64_t samples = 0;    // sampled calls measured
  uint64_t switches = 0;   // times `recommended` changed
  uint64_t dropped = 0;    // samples not taken: queue full, busy, CPU budget
  uint64_t malformed = 0;  // sampled bytes that did not parse
  uint64_t captured = 0;   // sampled requests written to capture_dir
  uint64_t capture_errors = 0;  // failed writes (capturing then stops)
  // kAuto only: settled (not learning or re-checking now), decisions taken
  // (the first and each re-check's), modes dropped early by the sequential
  // test, and what the first decision took: samples, calls, seconds from
  // the first sample (0 before it).
  bool settled = false;
  uint64_t decisions = 0;
  uint64_t dropped_modes = 0;
  uint64_t settle_samples = 0;
  uint64_t settle_calls = 0;
  double settle_s = 0;
  // kAuto, how it learned: calls timed on the real calls and observed
  // (kRealCalls),
  // timed calls lost (a callback call that ended on another thread than it
  // began, or around another call's messages; an async call whose window
  // was not its own: not observed, billed), timed calls that did not end
  // OK (a sync call with a non-OK status or cancelled, an async call
  // answered with a non-OK status or not answered: not observed, billed),
  // and samples the measuring thread took. `callback_fallback`: its
  // callback (or async) calls lost more than half of a window of 32
  // trials, so it learns on the measuring thread from then on (logged
  // once).
  uint64_t timed_calls = 0;
  uint64_t lost_calls = 0;
  // Timed reuse calls whose message was a new instance (its pool still
  // warming: such a call costs what a fresh arena does), left out of what
  // the learner saw and handed out again, at most 32 a decision.
  uint64_t warming_calls = 0;
  // Of the timed calls (observed or warming), those of the callback or async
  // API whose request was walked for its size (ByteSizeLong()); the others took
  // the method's known request size (a method whose requests keep one size is
  // sized on 1 timed call in 8).
  uint64_t sized_requests = 0;
  uint64_t failed_calls = 0;
  uint64_t side_samples = 0;
  bool callback_fallback = false;
  // kAuto, kRealCalls with AutoOptions::confirm on: confirmations by the
  // process's CPU finished and how many took the rival; the last one's
  // rival / chosen process CPU per byte (geometric mean over its epoch
  // pairs) and its t statistic; when the first ended (seconds from the
  // first timed call; 0 before it).
  uint64_t confirmations = 0;
  uint64_t confirm_switches = 0;
  double confirm_ratio = 0;
  double confirm_t = 0;
  double confirmed_s = 0;
  // kAuto: where the running decision came from (learned with every mode
  // measured, learned with heap held out by the prior, loaded from
  // AutoOptions::decisions_path; kNone while the first is being learned),
  // and the decisions taken with heap held out.
  DecisionSource decision_source = DecisionSource::kNone;
  uint64_t prior_decisions = 0;
};
using AutoMethodStats = MeasuredMethodStats;
// Every measured method; GetAutoMethodStats() only kAuto's.
std::vector<MeasuredMethodStats> GetMeasuredMethodStats();
std::vector<AutoMethodStats> GetAutoMethodStats();

// What kAuto's and shadow measurement's measuring has cost the process so
// far, in CPU seconds: the measuring thread, and the call threads
// serializing sampled calls. Against the process's CPU time it is the
// overhead of measuring.
struct MeasuringCost {
  double thread_cpu_s = 0;
  double sampling_cpu_s = 0;
};
MeasuringCost GetMeasuringCost();

// A method an install serves (every API): how it is served and the mode
// its calls run in now (kAuto: the chooser's pick).
struct ServedMethodStats {
  std::string method;  // "pkg.Service/Method", or "pkg.Req -> pkg.Resp"
  ServerApi api = ServerApi::kSync;
  AllocationMode installed = AllocationMode::kArena;  // kill switch applied
  AllocationMode mode = AllocationMode::kArena;       // calls run in it now
  // Calls answered DEADLINE_EXCEEDED because their deadline had passed:
  // on the sync API before their request was parsed, on the async API
  // before their handler (AsyncMethod::DeadlinePassed).
  uint64_t shed_deadline = 0;
};
std::vector<ServedMethodStats> GetServedMethodStats();

struct GrpcStats {
  std::array<GrpcModeStats, kNumAllocationModes> modes;  // by AllocationMode
  // kReuse: summed over the shared pools gRPC allocators use.
  uint64_t reuse_hits = 0;       // MessagePoolStats::reuse_hits
  uint64_t reuse_created = 0;    // MessagePoolStats::created
  uint64_t reuse_evictions = 0;  // evicted_by_guard + dropped_idle
  uint64_t reuse_in_use = 0;     // pooled messages on loan now
  // ServerOptions::max_pooled_bytes: calls given heap messages while over
  // the cap, and the trims that caused (depots only).
  uint64_t over_cap_heap_calls = 0;
  uint64_t over_cap_trims = 0;
  uint64_t idle_trims = 0;  // ServerOptions::idle_trim: trims done
  std::vector<ServedMethodStats> methods;  // every served method
  // Sync methods' calls received and not yet handled now (0 at rest).
  uint64_t sync_parked = 0;
  // Background threads (idle trimming, kAuto's and shadow measuring) that
  // could not be started (e.g. the process at its thread limit): that work
  // is then not done; calls are served as usual. Logged once to stderr.
  uint64_t background_thread_failures = 0;
  std::vector<MeasuredMethodStats> auto_methods;    // kAuto's choices
  std::vector<MeasuredMethodStats> shadow_methods;  // shadow measurement
  MeasuringCost measuring;
};
GrpcStats GetGrpcStats();

// All of the above after the core's PrometheusText() (arenarpc/metrics.h:
// page pool, arenas, message and object pools), in the Prometheus text
// exposition format.
std::string RenderPrometheusStats();

}  // namespace arenarpc

#endif  // ARENARPC_GRPC_STATS_H_
