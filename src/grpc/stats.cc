#include "arenarpc/grpc/stats.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "arenarpc/arena.h"
#include "arenarpc/internal/mutex.h"
#include "arenarpc/internal/striped_counter.h"
#include "arenarpc/page_pool.h"

namespace arenarpc {
namespace {

struct ModeCounters {
  internal::StripedCounter allocated;
  internal::StripedCounter released;
  std::atomic<uint64_t> free_requests{0};
  std::atomic<uint64_t> arena_bytes_sum{0};
  std::atomic<uint64_t> buckets[kArenaBytesBuckets] = {};
};

ModeCounters* Counters() {
  static ModeCounters* const counters = new ModeCounters[kNumAllocationModes];
  return counters;
}

struct PoolEntry {
  std::string name;
  bool used_by_grpc;
  MessagePoolStats (*stats)(const void*);
  const void* pool;
};

struct Registry {
  internal::Mutex mu;
  std::vector<PoolEntry> pools ABSL_GUARDED_BY(mu);
};

Registry& GetRegistry() {
  static Registry* const registry = new Registry();
  return *registry;
}

int BucketOf(uint64_t bytes) {
  for (int i = 0; i < kArenaBytesBuckets - 1; ++i) {
    if (bytes <= kArenaBytesBucketBounds[i]) return i;
  }
  return kArenaBytesBuckets - 1;
}

uint64_t Percentile(const std::array<uint64_t, kArenaBytesBuckets>& buckets,
                    double q) {
  uint64_t total = 0;
  for (uint64_t b : buckets) total += b;
  if (total == 0) return 0;
  const auto rank = static_cast<uint64_t>(q * static_cast<double>(total));
  uint64_t seen = 0;
  for (int i = 0; i < kArenaBytesBuckets - 1; ++i) {
    seen += buckets[i];
    if (seen > rank) return kArenaBytesBucketBounds[i];
  }
  return UINT64_MAX;  // in the +Inf bucket
}

}  // namespace

namespace internal {

void RecordAllocate(AllocationMode mode) {
  Counters()[static_cast<int>(mode)].allocated.Add(1);
}

void RecordRelease(AllocationMode mode, uint64_t arena_bytes) {
  ModeCounters& c = Counters()[static_cast<int>(mode)];
  c.released.Add(1);
  if (mode == AllocationMode::kArena) {
    c.arena_bytes_sum.fetch_add(arena_bytes, std::memory_order_relaxed);
    c.buckets[BucketOf(arena_bytes)].fetch_add(1, std::memory_order_relaxed);
  }
}

void RecordFreeRequest(AllocationMode mode) {
  Counters()[static_cast<int>(mode)].free_requests.fetch_add(
      1, std::memory_order_relaxed);
}

// A destroyed pool leaves the registry before any of it is gone; readers
// hold the registry lock while they read a pool, so none reads it after.
void UnregisterMessagePool(const void* pool) {
  Registry& r = GetRegistry();
  internal::MutexLock lock(&r.mu);
  std::erase_if(r.pools, [pool](const PoolEntry& e) { return e.pool == pool; });
}

void RegisterMessagePool(std::string name, bool used_by_grpc,
                         MessagePoolStats (*stats)(const void*),
                         const void* pool) {
  SetMessagePoolDestroyedHook(&UnregisterMessagePool);
  Registry& r = GetRegistry();
  internal::MutexLock lock(&r.mu);
  r.pools.push_back({std::move(name), used_by_grpc, stats, pool});
}

}  // namespace internal

std::vector<NamedMessagePoolStats> GetMessagePoolStats() {
  // Under the lock: a pool being destroyed waits in UnregisterMessagePool
  // until this read is done (Stats() is cheap: no walk of messages).
  Registry& r = GetRegistry();
  internal::MutexLock lock(&r.mu);
  std::vector<NamedMessagePoolStats> out;
  out.reserve(r.pools.size());
  for (const PoolEntry& p : r.pools) {
    out.push_back({p.name, p.used_by_grpc, p.stats(p.pool)});
  }
  return out;
}

GrpcStats GetGrpcStats() {
  GrpcStats s;
  for (int m = 0; m < kNumAllocationModes; ++m) {
    ModeCounters& c = Counters()[m];
    GrpcModeStats& out = s.modes[m];
    const int64_t released = c.released.Sum();
    const int64_t allocated = c.allocated.Sum();
    out.calls = static_cast<uint64_t>(released);
    out.in_flight = static_cast<uint64_t>(std::max<int64_t>(0, allocated - released));
    out.free_request_calls = c.free_requests.load(std::memory_order_relaxed);
    out.arena_bytes_sum = c.arena_bytes_sum.load(std::memory_order_relaxed);
    for (int i = 0; i < kArenaBytesBuckets; ++i) {
      out.arena_bytes_buckets[i] = c.buckets[i].load(std::memory_order_relaxed);
    }
    out.arena_bytes_p50 = Percentile(out.arena_bytes_buckets, 0.50);
    out.arena_bytes_p90 = Percentile(out.arena_bytes_buckets, 0.90);
    out.arena_bytes_p99 = Percentile(out.arena_bytes_buckets, 0.99);
  }
  for (const NamedMessagePoolStats& p : GetMessagePoolStats()) {
    if (!p.used_by_grpc) continue;
    s.reuse_hits += p.stats.reuse_hits;
    s.reuse_created += p.stats.created;
    s.reuse_evictions += p.stats.evicted_by_guard + p.stats.dropped_idle;
    s.reuse_in_use += p.stats.in_use;
  }
  s.over_cap_heap_calls = internal::OverCapHeapCalls();
  s.over_cap_trims = internal::CapTrims();
  s.idle_trims = internal::IdleTrims();
  for (MeasuredMethodStats& m : GetMeasuredMethodStats()) {
    (m.automatic ? s.auto_methods : s.shadow_methods).push_back(std::move(m));
  }
  s.measuring = GetMeasuringCost();
  return s;
}

namespace {

// Label values: escape backslash, double quote and newline.
std::string Escape(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

class Writer {
 public:
  // Writes HELP and TYPE once per family.
  void Family(std::string_view name, std::string_view type,
              std::string_view help) {
    out_.append("# HELP ").append(name).append(" ").append(help);
    out_.append("\n# TYPE ").append(name).append(" ").append(type);
    out_.append("\n");
  }
  void Sample(std::string_view name, std::string_view labels, uint64_t value) {
    out_.append(name);
    if (!labels.empty()) out_.append("{").append(labels).append("}");
    out_.append(" ").append(std::to_string(value)).append("\n");
  }
  void Value(std::string_view name, std::string_view labels, double value) {
    out_.append(name);
    if (!labels.empty()) out_.append("{").append(labels).append("}");
    out_.append(" ").append(absl::StrCat(value)).append("\n");
  }
  void One(std::string_view name, std::string_view type, std::string_view help,
           uint64_t value) {
    Family(name, type, help);
    Sample(name, "", value);
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

std::string ModeLabel(int m) {
  return absl::StrCat("mode=\"",
                      std::string(AllocationModeName(static_cast<AllocationMode>(m))), "\"");
}

// arenarpc_grpc_<kind>_*: kAuto's ("auto") or shadow measurement's methods.
void RenderMeasured(Writer& w, std::string_view kind,
                    const std::vector<MeasuredMethodStats>& methods) {
  if (methods.empty()) return;
  const bool automatic = kind == "auto";
  const std::string p = absl::StrCat("arenarpc_grpc_", std::string(kind), "_");
  auto method = [](const MeasuredMethodStats& a) {
    return absl::StrCat("method=\"", Escape(a.method), "\"");
  };
  const std::string pick = p + (automatic ? "chosen" : "recommended");
  w.Family(pick, "gauge",
           automatic ? "kAuto: 1 for the mode chosen for a method, 0 for the others."
                     : "Shadow: 1 for the mode measured cheapest for a method, 0 for the "
                       "others.");
  for (const MeasuredMethodStats& a : methods) {
    for (int m = 0; m < kNumAllocationModes; ++m) {
      w.Sample(pick, absl::StrCat(method(a), ",", ModeLabel(m)),
               static_cast<int>(a.recommended) == m ? 1 : 0);
    }
  }
  w.Family(p + "cost_microseconds", "gauge",
           "Measured parse + destroy of a call's messages, per mode.");
  for (const MeasuredMethodStats& a : methods) {
    for (int m = 0; m < kNumAllocationModes; ++m) {
      w.Value(p + "cost_microseconds", absl::StrCat(method(a), ",", ModeLabel(m)),
              a.cost_us[m]);
    }
  }
  if (!automatic) {
    w.Family(p + "saving_microseconds", "gauge",
             "Estimated CPU per call saved by switching to the recommended mode.");
    for (const MeasuredMethodStats& a : methods) {
      w.Value(p + "saving_microseconds",
              absl::StrCat(method(a), ",", ModeLabel(static_cast<int>(a.mode))),
              a.saving_us);
    }
  }
  struct Counter {
    const char* suffix;
    const char* help;
    uint64_t MeasuredMethodStats::*field;
  };
  static constexpr Counter kCounters[] = {
      {"samples_total", "Sampled calls measured.", &MeasuredMethodStats::samples},
      {"switches_total", "Times the cheapest mode changed.",
       &MeasuredMethodStats::switches},
      {"dropped_total", "Samples not measured: queue full or busy, CPU budget spent.",
       &MeasuredMethodStats::dropped},
      {"malformed_total", "Sampled bytes that did not parse.",
       &MeasuredMethodStats::malformed},
      {"captured_total", "Sampled requests written to the capture directory.",
       &MeasuredMethodStats::captured},
  };
  for (const Counter& c : kCounters) {
    w.Family(p + c.suffix, "counter", c.help);
    for (const MeasuredMethodStats& a : methods) w.Sample(p + c.suffix, method(a), a.*c.field);
  }
}

}  // namespace

std::string RenderPrometheusStats() {
  Writer w;
  const PagePoolStats pp = PagePool::Default().Stats();
  w.One("arenarpc_page_pool_page_size_bytes", "gauge",
        "Bytes per page of the default page pool.", pp.page_size);
  w.One("arenarpc_page_pool_pages_in_use", "gauge",
        "Pages handed out and not yet returned.", pp.pages_in_use);
  w.One("arenarpc_page_pool_pages_cached", "gauge",
        "Pages kept for reuse in thread caches and the depot.", pp.pages_cached);
  w.One("arenarpc_page_pool_pages_in_depot", "gauge",
        "Pages kept for reuse in the shared depot.", pp.pages_in_depot);
  w.One("arenarpc_page_pool_bytes_held", "gauge",
        "Bytes mapped from the OS now (in use plus cached).", pp.bytes_held());
  w.One("arenarpc_page_pool_os_pages_allocated_total", "counter",
        "Pages mapped from the OS.", pp.os_pages_allocated);
  w.One("arenarpc_page_pool_os_pages_released_total", "counter",
        "Pages unmapped.", pp.os_pages_released);
  w.One("arenarpc_page_pool_cache_hits_total", "counter",
        "Allocations served by a thread cache.", pp.cache_hits);
  w.One("arenarpc_page_pool_cache_misses_total", "counter",
        "Allocations served by the depot or the OS.", pp.cache_misses);

  const ArenaStats as = GetArenaStats();
  w.One("arenarpc_arena_acquired_total", "counter",
        "ScopedArenas constructed.", as.arenas_acquired);
  w.One("arenarpc_arena_created_total", "counter",
        "protobuf Arena objects built.", as.arenas_created);
  w.One("arenarpc_arena_idle", "gauge", "Arenas kept for reuse.",
        as.arenas_idle);
  w.One("arenarpc_arena_heap_blocks_total", "counter",
        "Oversize arena blocks taken from the heap.", as.blocks_from_heap);
  w.One("arenarpc_arena_heap_bytes_total", "counter",
        "Bytes of oversize arena blocks.", as.bytes_from_heap);
  w.One("arenarpc_arena_heap_fallback_blocks_total", "counter",
        "Arena pages taken from the heap because the page pool had none.",
        as.blocks_from_heap_fallback);

  const std::vector<NamedMessagePoolStats> pools = GetMessagePoolStats();
  struct PoolField {
    const char* name;
    const char* type;
    const char* help;
    uint64_t MessagePoolStats::*field;
  };
  static constexpr PoolField kPoolFields[] = {
      {"arenarpc_message_pool_acquisitions_total", "counter",
       "Messages acquired.", &MessagePoolStats::acquisitions},
      {"arenarpc_message_pool_reuse_hits_total", "counter",
       "Acquisitions served by an existing instance.",
       &MessagePoolStats::reuse_hits},
      {"arenarpc_message_pool_created_total", "counter", "Instances built.",
       &MessagePoolStats::created},
      {"arenarpc_message_pool_evicted_by_guard_total", "counter",
       "Instances rebuilt on return: held content above the bound.",
       &MessagePoolStats::evicted_by_guard},
      {"arenarpc_message_pool_rebuilt_garbage_total", "counter",
       "Instances rebuilt on return: abandoned arena bytes over the limit.",
       &MessagePoolStats::rebuilt_garbage},
      {"arenarpc_message_pool_rebuilt_aged_total", "counter",
       "Instances rebuilt after rebuild_every uses.",
       &MessagePoolStats::rebuilt_aged},
      {"arenarpc_message_pool_rebuilt_after_exception_total", "counter",
       "Instances destroyed on return: an exception interrupted their use.",
       &MessagePoolStats::rebuilt_after_exception},
      {"arenarpc_message_pool_fresh_arena_returns_total", "counter",
       "Returns that reset the instance's arena: Clear() cannot keep the type.",
       &MessagePoolStats::fresh_arena_returns},
      {"arenarpc_message_pool_dropped_idle_total", "counter",
       "Instances destroyed: idle bound reached.",
       &MessagePoolStats::dropped_idle},
      {"arenarpc_message_pool_in_use", "gauge", "Messages on loan.",
       &MessagePoolStats::in_use},
      {"arenarpc_message_pool_idle", "gauge", "Instances kept for reuse.",
       &MessagePoolStats::idle},
      {"arenarpc_message_pool_bound_bytes", "gauge",
       "The growth guard's current bound.", &MessagePoolStats::bound_bytes},
      {"arenarpc_message_pool_retained_bytes", "gauge",
       "Arena bytes held by idle instances.",
       &MessagePoolStats::retained_bytes},
      {"arenarpc_message_pool_kept_percent", "gauge",
       "Share of an instance's arena bytes a use did not allocate again.",
       &MessagePoolStats::kept_percent},
  };
  if (!pools.empty()) {
    for (const PoolField& f : kPoolFields) {
      w.Family(f.name, f.type, f.help);
      for (const NamedMessagePoolStats& p : pools) {
        w.Sample(f.name, absl::StrCat("pool=\"", Escape(p.name), "\""),
                 p.stats.*f.field);
      }
    }
  }

  const GrpcStats gs = GetGrpcStats();
  auto mode_label = ModeLabel;
  w.Family("arenarpc_grpc_calls_total", "counter",
           "gRPC unary calls completed, by allocation mode.");
  for (int m = 0; m < kNumAllocationModes; ++m) {
    w.Sample("arenarpc_grpc_calls_total", mode_label(m), gs.modes[m].calls);
  }
  w.Family("arenarpc_grpc_calls_in_flight", "gauge",
           "gRPC unary calls holding messages now, by allocation mode.");
  for (int m = 0; m < kNumAllocationModes; ++m) {
    w.Sample("arenarpc_grpc_calls_in_flight", mode_label(m),
             gs.modes[m].in_flight);
  }
  w.Family("arenarpc_grpc_free_request_total", "counter",
           "Requests released early with FreeRequest().");
  for (int m = 0; m < kNumAllocationModes; ++m) {
    w.Sample("arenarpc_grpc_free_request_total", mode_label(m),
             gs.modes[m].free_request_calls);
  }
  const GrpcModeStats& arena = gs.modes[static_cast<int>(AllocationMode::kArena)];
  w.Family("arenarpc_grpc_arena_bytes_per_call", "histogram",
           "Arena bytes (request and response arenas) per arena-mode call.");
  uint64_t cumulative = 0;
  for (int i = 0; i < kArenaBytesBuckets; ++i) {
    cumulative += arena.arena_bytes_buckets[i];
    const std::string le =
        i + 1 < kArenaBytesBuckets
            ? absl::StrCat("le=\"", kArenaBytesBucketBounds[i], "\"")
            : std::string("le=\"+Inf\"");
    w.Sample("arenarpc_grpc_arena_bytes_per_call_bucket", le, cumulative);
  }
  w.Sample("arenarpc_grpc_arena_bytes_per_call_sum", "", arena.arena_bytes_sum);
  w.Sample("arenarpc_grpc_arena_bytes_per_call_count", "", cumulative);
  w.One("arenarpc_grpc_reuse_hits_total", "counter",
        "Reuse-mode messages served by an existing pooled instance.",
        gs.reuse_hits);
  w.One("arenarpc_grpc_reuse_evictions_total", "counter",
        "Reuse-mode instances destroyed by the growth guard or idle bound.",
        gs.reuse_evictions);
  // ServerOptions::max_pooled_bytes and idle_trim at work.
  const struct {
    const char* name;
    const char* help;
    uint64_t value;
  } trim_counters[] = {
      {"arenarpc_grpc_over_cap_heap_calls_total",
       "Calls given heap messages: pooled memory over max_pooled_bytes.",
       gs.over_cap_heap_calls},
      {"arenarpc_grpc_over_cap_trims_total",
       "Depot trims done because pooled memory was over max_pooled_bytes.",
       gs.over_cap_trims},
      {"arenarpc_grpc_idle_trims_total",
       "Trims done after the server was idle for idle_trim.idle_ms.",
       gs.idle_trims}};
  for (const auto& c : trim_counters) w.One(c.name, "counter", c.help, c.value);
  if (!gs.auto_methods.empty() || !gs.shadow_methods.empty()) {
    w.Family("arenarpc_grpc_measuring_cpu_seconds_total", "counter",
             "CPU spent measuring (kAuto, shadow): the measuring thread, and call "
             "threads serializing sampled calls.");
    w.Value("arenarpc_grpc_measuring_cpu_seconds_total", "part=\"thread\"",
            gs.measuring.thread_cpu_s);
    w.Value("arenarpc_grpc_measuring_cpu_seconds_total", "part=\"sampling\"",
            gs.measuring.sampling_cpu_s);
  }
  RenderMeasured(w, "auto", gs.auto_methods);
  RenderMeasured(w, "shadow", gs.shadow_methods);
  return w.Take();
}

}  // namespace arenarpc
