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
// RenderPrometheusStats(): the core's PrometheusText() (arenarpc/metrics.h),
// then arenarpc_grpc_*, as text exposition format 0.0.4; each family and
// its labels: docs/OPERATE.md, "Metrics".
//
// Thread safety: everything here may be called from any thread at any time;
// a snapshot taken under load may be off by the calls in progress.
// Lifetime: registered pools as in arenarpc/metrics.h.
#ifndef ARENARPC_GRPC_STATS_H_
#define ARENARPC_GRPC_STATS_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "arenarpc/grpc/install_result.h"
#include "arenarpc/grpc/kill_switch.h"
#include "arenarpc/message_pool.h"
#include "arenarpc/metrics.h"  // GetMessagePoolStats, RegisterMessagePoolStats

namespace arenarpc {

// Bucket i of the arena-bytes histogram counts calls with bytes <=
// kArenaBytesBucketBounds[i] = 4 KiB << i (and above the previous bound);
// the last bucket is +Inf.
inline constexpr int kArenaBytesBuckets = 16;
inline constexpr auto kArenaBytesBucketBounds = [] {
  std::array<uint64_t, kArenaBytesBuckets - 1> bounds{};
  for (size_t i = 0; i < bounds.size(); ++i) bounds[i] = uint64_t{4096} << i;
  return bounds;
}();

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

// A measured method: kAuto's (GrpcStats::auto_methods) or shadow
// measurement's (GrpcStats::shadow_methods; a kAuto method with shadow on is
// in both). Costs per mode in microseconds of CPU per call.
struct MeasuredMethodStats {
  std::string method;      // "pkg.Service/Method", or "pkg.Req -> pkg.Resp"
  bool automatic = false;  // kAuto's entry
  AllocationMode mode = AllocationMode::kArena;          // calls run in it now
  AllocationMode recommended = AllocationMode::kArena;   // cheapest measured
  std::array<double, kNumAllocationModes> cost_us = {};  // 0: not measured
  uint64_t switches = 0;  // times the chosen (recommended) mode changed
  // Shadow: the CPU per call switching to `recommended` would save, the
  // sampled calls measured, samples not taken (queue full or busy, CPU
  // share spent), sampled bytes that did not parse, requests captured.
  double saving_us = 0;
  uint64_t samples = 0;
  uint64_t dropped = 0;
  uint64_t malformed = 0;
  uint64_t captured = 0;
  uint64_t capture_errors = 0;
  // kAuto: not learning now; decisions taken (the first and each
  // re-check's); the first decision's timed calls and seconds from its first
  // timed call; where the running decision came from; decisions taken with
  // heap held out by the prior.
  bool settled = false;
  uint64_t decisions = 0;
  uint64_t settle_calls = 0;
  double settle_s = 0;
  DecisionSource decision_source = DecisionSource::kNone;
  uint64_t prior_decisions = 0;
  // kAuto's trials: timed and observed; on a new pooled instance (not
  // observed); lost (ended on another thread or around another call; async:
  // outside its window); failed (not OK, cancelled, or never came).
  // `untimed`: most of a window of trials was lost, so the method paused
  // learning until its re-check (logged once).
  uint64_t timed_calls = 0;
  uint64_t warming_calls = 0;
  uint64_t lost_calls = 0;
  uint64_t failed_calls = 0;
  bool untimed = false;
};
using AutoMethodStats = MeasuredMethodStats;

// kAuto's and shadow's methods; GetAutoMethodStats() only kAuto's.
std::vector<MeasuredMethodStats> GetMeasuredMethodStats();
std::vector<AutoMethodStats> GetAutoMethodStats();

// What measuring has cost the process so far, in CPU seconds: the
// background thread, shadow's sampling on the call threads, and kAuto's
// learning (trials' excess over the cheapest mode, clock reads).
struct MeasuringCost {
  double thread_cpu_s = 0;
  double sampling_cpu_s = 0;
  double learning_cpu_s = 0;
};
MeasuringCost GetMeasuringCost();

// A method an install serves (every API): how it is served and the mode
// its calls run in now (kAuto: the chooser's pick).
struct ServedMethodStats {
  std::string method;  // "pkg.Service/Method", or "pkg.Req -> pkg.Resp"
  ServerApi api = ServerApi::kSync;
  AllocationMode installed = AllocationMode::kArena;  // kill switch applied
  AllocationMode mode = AllocationMode::kArena;       // calls run in it now
  // Calls answered DEADLINE_EXCEEDED, their deadline passed: sync, before
  // their request was parsed; async, before their handler (DeadlinePassed).
  uint64_t shed_deadline = 0;
  // Calls answered RESOURCE_EXHAUSTED unparsed: max_calls_in_flight were
  // in flight (ServerOptions).
  uint64_t shed_limit = 0;
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
  uint64_t sync_parked = 0;  // sync calls received, not yet handled (0 at rest)
  // The background thread could not start (e.g. the thread limit): its
  // work is not done; calls are served as usual. Logged once to stderr.
  uint64_t background_thread_failures = 0;
  std::vector<MeasuredMethodStats> auto_methods;    // kAuto's choices
  std::vector<MeasuredMethodStats> shadow_methods;  // shadow measurement
  MeasuringCost measuring;
};
GrpcStats GetGrpcStats();

// All of the above after the core's PrometheusText(), as Prometheus text.
std::string RenderPrometheusStats();

}  // namespace arenarpc

#endif  // ARENARPC_GRPC_STATS_H_
