// Stats of arenarpc's gRPC adapters, and every arenarpc stat as Prometheus
// text.
//
//   arenarpc::GrpcStats s = arenarpc::GetGrpcStats();
//   uint64_t arena_calls = s.modes[int(arenarpc::AllocationMode::kArena)].calls;
//   uint64_t p99 = s.modes[int(arenarpc::AllocationMode::kArena)].arena_bytes_p99;
//
//   // e.g. behind an HTTP /metrics handler:
//   std::string text = arenarpc::RenderPrometheusStats();
//
//   // Make an application's own MessagePool visible there too:
//   static arenarpc::MessagePool<MyDoc> docs;
//   arenarpc::RegisterMessagePoolStats("my.Doc", &docs);
//
// RenderPrometheusStats() renders (text exposition format 0.0.4):
//   arenarpc_page_pool_*      PagePool::Default().Stats()
//   arenarpc_arena_*          GetArenaStats()
//   arenarpc_message_pool_*   every registered MessagePool, label pool="..."
//                             (kReuse's pools register themselves)
//   arenarpc_grpc_*           calls per mode (label mode="heap|arena|reuse";
//                             kAuto's calls count under the mode they ran in),
//                             calls in flight, FreeRequest() calls, and the
//                             histogram of arena bytes per kArena call, and
//                             kAuto's choice and measured costs per method
//                             (arenarpc_grpc_auto_*, label method="...").
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

#include "arenarpc/grpc/server.h"
#include "arenarpc/message_pool.h"

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
  uint64_t calls = 0;              // holders released (calls completed)
  uint64_t in_flight = 0;          // holders allocated, not yet released
  uint64_t free_request_calls = 0; // FreeRequest() that freed a request
  // kArena only: bytes of both arenas of a call, at its end.
  uint64_t arena_bytes_sum = 0;
  std::array<uint64_t, kArenaBytesBuckets> arena_bytes_buckets = {};
  // Upper bounds of the buckets holding these percentiles (0 if no calls).
  uint64_t arena_bytes_p50 = 0;
  uint64_t arena_bytes_p90 = 0;
  uint64_t arena_bytes_p99 = 0;
};

// kAuto, per (request type, response type): what the chooser picked and the
// costs behind it (parse + destroy of request and response, measured on
// sampled calls off the request path, smoothed).
struct AutoMethodStats {
  std::string method;  // "pkg.Request -> pkg.Response"
  AllocationMode mode = AllocationMode::kArena;  // chosen now
  std::array<double, kNumAllocationModes> cost_us = {};  // by AllocationMode
  uint64_t samples = 0;   // sampled calls measured
  uint64_t switches = 0;  // times the choice changed
  uint64_t dropped = 0;   // samples not taken (measuring queue full or busy)
};
std::vector<AutoMethodStats> GetAutoMethodStats();

struct GrpcStats {
  std::array<GrpcModeStats, kNumAllocationModes> modes;  // by AllocationMode
  // kReuse: summed over the shared pools gRPC allocators use.
  uint64_t reuse_hits = 0;        // MessagePoolStats::reuse_hits
  uint64_t reuse_created = 0;     // MessagePoolStats::created
  uint64_t reuse_evictions = 0;   // evicted_by_guard + dropped_idle
  uint64_t reuse_in_use = 0;      // pooled messages on loan now
  std::vector<AutoMethodStats> auto_methods;  // kAuto's choices
};
GrpcStats GetGrpcStats();

// One registered message pool.
struct NamedMessagePoolStats {
  std::string name;
  bool used_by_grpc = false;
  MessagePoolStats stats;
};
std::vector<NamedMessagePoolStats> GetMessagePoolStats();

template <class T>
void RegisterMessagePoolStats(std::string name, const MessagePool<T>* pool) {
  internal::RegisterMessagePool(
      std::move(name), /*used_by_grpc=*/false,
      [](const void* p) { return static_cast<const MessagePool<T>*>(p)->Stats(); },
      pool);
}

// All of the above, plus page pool and arena stats, in the Prometheus text
// exposition format.
std::string RenderPrometheusStats();

}  // namespace arenarpc

#endif  // ARENARPC_GRPC_STATS_H_
