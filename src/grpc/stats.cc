#include "arenarpc/grpc/stats.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "arenarpc/arena.h"
#include "arenarpc/grpc/install.h"
#include "arenarpc/grpc/internal/counters.h"
#include "arenarpc/grpc/internal/shed.h"
#include "arenarpc/grpc/stream.h"
#include "arenarpc/grpc/streaming.h"
#include "arenarpc/internal/striped_counter.h"
#include "arenarpc/metrics.h"
#include "arenarpc/page_pool.h"
#include "src/grpc/measured_stats.h"
#include "src/internal/background.h"
#include "src/internal/bucket_percentile.h"
#include "src/internal/prometheus_writer.h"

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

int BucketOf(uint64_t bytes) {
  for (int i = 0; i < kArenaBytesBuckets - 1; ++i) {
    if (bytes <= kArenaBytesBucketBounds[i]) return i;
  }
  return kArenaBytesBuckets - 1;
}

// The upper bound of the bucket holding the q-quantile; 0 if no calls.
uint64_t Percentile(const std::array<uint64_t, kArenaBytesBuckets>& buckets,
                    double q) {
  const std::optional<size_t> b = internal::PercentileBucket(buckets, q);
  if (!b.has_value()) return 0;
  if (*b + 1 == size_t{kArenaBytesBuckets}) return UINT64_MAX;  // +Inf bucket
  return kArenaBytesBucketBounds[*b];
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

namespace {
struct InstalledMethod {
  ServerApi api;
  AllocationMode installed;
  const AutoMethod* automatic;
};
struct InstalledRegistry {
  Mutex mu;
  // By method name: installing the same method again updates its entry.
  std::map<std::string, InstalledMethod> methods ABSL_GUARDED_BY(mu);
};
InstalledRegistry& Installed() {
  static auto* const registry = new InstalledRegistry;
  return *registry;
}
}  // namespace

void RecordInstalledMethod(std::string_view method, ServerApi api,
                           AllocationMode installed,
                           const AutoMethod* automatic) {
  InstalledRegistry& r = Installed();
  MutexLock lock(&r.mu);
  r.methods[std::string(method)] = {api, installed, automatic};
}

MethodInstall Served(std::string_view method, ServerApi api,
                     AllocationMode mode, const AutoMethod* automatic) {
  RecordInstalledMethod(method, api, mode, automatic);
  MethodInstall m;
  m.method = std::string(method);
  m.served = true;
  m.api = api;
  m.mode = mode;
  return m;
}

bool SameMeasuring(const ServerOptions& a, const ServerOptions& b) {
  const AutoOptions& x = a.automatic;
  const AutoOptions& y = b.automatic;
  const ShadowOptions& u = a.shadow;
  const ShadowOptions& v = b.shadow;
  return x.max_cpu_share == y.max_cpu_share &&
         x.recheck_after_s == y.recheck_after_s &&
         x.prior.min_bytes == y.prior.min_bytes &&
         x.prior.heap_ns_per_byte == y.prior.heap_ns_per_byte &&
         x.decisions_path == y.decisions_path &&
         x.save_decisions == y.save_decisions &&
         u.sample_one_in == v.sample_one_in &&
         u.max_cpu_share == v.max_cpu_share && u.capture_dir == v.capture_dir &&
         u.capture_max_files == v.capture_max_files &&
         u.capture_max_bytes == v.capture_max_bytes;
}

MethodInstall NotServed(std::string_view method, std::string reason,
                        bool unary) {
  MethodInstall m;
  m.method = std::string(method);
  m.unary = unary;
  m.reason = std::move(reason);
  return m;
}

}  // namespace internal

std::vector<MeasuredMethodStats> GetMeasuredMethodStats() {
  std::vector<MeasuredMethodStats> out = internal::AutoMethodsStats();
  for (MeasuredMethodStats& m : internal::ShadowMethodStats()) {
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<AutoMethodStats> GetAutoMethodStats() {
  return internal::AutoMethodsStats();
}

MeasuringCost GetMeasuringCost() {
  return {internal::BackgroundCpuNs() / 1e9,
          internal::ShadowSamplingCpuNs() / 1e9,
          internal::AutoLearningCpuNs() / 1e9};
}

std::vector<ServedMethodStats> GetServedMethodStats() {
  std::vector<ServedMethodStats> out;
  internal::InstalledRegistry& r = internal::Installed();
  internal::MutexLock lock(&r.mu);
  for (const auto& [name, m] : r.methods) {
    ServedMethodStats s;
    s.method = name;
    s.api = m.api;
    s.installed = m.installed;
    s.mode = m.automatic != nullptr ? m.automatic->mode() : m.installed;
    if (const internal::ShedCounters* c = internal::FindShedCounters(name)) {
      s.shed_deadline = c->deadline.load(std::memory_order_relaxed);
    }
    out.push_back(std::move(s));
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
    out.in_flight =
        static_cast<uint64_t>(std::max<int64_t>(0, allocated - released));
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
  s.background_thread_failures = internal::BackgroundThreadFailures();
  s.auto_methods = internal::AutoMethodsStats();
  s.shadow_methods = internal::ShadowMethodStats();
  s.measuring = GetMeasuringCost();
  s.methods = GetServedMethodStats();
  s.sync_parked = internal::ParkedHolders();
  return s;
}

namespace {

using internal::PrometheusEscape;
using Writer = internal::PrometheusWriter;

std::string ModeLabel(int m) {
  return absl::StrCat(
      "mode=\"",
      std::string(AllocationModeName(static_cast<AllocationMode>(m))), "\"");
}

// arenarpc_grpc_<kind>_*_total: the measured methods' counters.
void RenderMeasuredCounters(Writer& w, const std::string& p, bool automatic,
                            const std::vector<MeasuredMethodStats>& methods) {
  auto method = [](const MeasuredMethodStats& a) {
    return absl::StrCat("method=\"", PrometheusEscape(a.method), "\"");
  };
  struct Counter {
    const char* suffix;
    const char* help;
    uint64_t MeasuredMethodStats::*field;
  };
  static constexpr Counter kCounters[] = {
      {"samples_total", "Sampled calls measured.",
       &MeasuredMethodStats::samples},
      {"switches_total", "Times the cheapest mode changed.",
       &MeasuredMethodStats::switches},
      {"dropped_total",
       "Samples not measured: queue full or busy, CPU budget spent.",
       &MeasuredMethodStats::dropped},
      {"malformed_total", "Sampled bytes that did not parse.",
       &MeasuredMethodStats::malformed},
      {"captured_total", "Sampled requests written to the capture directory.",
       &MeasuredMethodStats::captured},
  };
  static constexpr Counter kAutoCounters[] = {
      {"switches_total", "Decisions that changed the mode.",
       &MeasuredMethodStats::switches},
      {"timed_calls_total", "Calls timed in a mode and observed.",
       &MeasuredMethodStats::timed_calls},
      {"lost_calls_total",
       "Timed calls lost: a callback call that ended on another thread or "
       "around another call, an async call outside its window (not "
       "observed).",
       &MeasuredMethodStats::lost_calls},
      {"failed_calls_total", "Timed calls that did not end OK (not observed).",
       &MeasuredMethodStats::failed_calls},
      {"warming_calls_total",
       "Timed reuse calls on a new pooled instance (not observed).",
       &MeasuredMethodStats::warming_calls},
  };
  for (const Counter& c : automatic ? std::span<const Counter>(kAutoCounters)
                                    : std::span<const Counter>(kCounters)) {
    w.Family(p + c.suffix, "counter", c.help);
    for (const MeasuredMethodStats& a : methods)
      w.Sample(p + c.suffix, method(a), a.*c.field);
  }
}

// arenarpc_grpc_<kind>_*: kAuto's ("auto") or shadow measurement's methods.
void RenderMeasured(Writer& w, std::string_view kind,
                    const std::vector<MeasuredMethodStats>& methods) {
  if (methods.empty()) return;
  const bool automatic = kind == "auto";
  const std::string p = absl::StrCat("arenarpc_grpc_", std::string(kind), "_");
  auto method = [](const MeasuredMethodStats& a) {
    return absl::StrCat("method=\"", PrometheusEscape(a.method), "\"");
  };
  const std::string pick = p + (automatic ? "chosen" : "recommended");
  w.Family(
      pick, "gauge",
      automatic
          ? "kAuto: 1 for the mode chosen for a method, 0 for the others."
          : "Shadow: 1 for the mode measured cheapest for a method, 0 for the "
            "others.");
  for (const MeasuredMethodStats& a : methods) {
    for (int m = 0; m < kNumAllocationModes; ++m) {
      w.Sample(pick, absl::StrCat(method(a), ",", ModeLabel(m)),
               static_cast<int>(a.recommended) == m ? 1 : 0);
    }
  }
  if (automatic) {
    w.Family(p + "decision", "gauge",
             "kAuto: 1 per method, labelled with the mode its calls run in "
             "and where that decision came from (learned: every mode "
             "measured; prior: heap held out; loaded: a decisions file; "
             "none: the first decision is being learned).");
    for (const MeasuredMethodStats& a : methods) {
      w.Sample(p + "decision",
               absl::StrCat(method(a), ",", ModeLabel(static_cast<int>(a.mode)),
                            ",source=\"", DecisionSourceName(a.decision_source),
                            "\""),
               1);
    }
  }
  w.Family(p + "cost_microseconds", "gauge",
           automatic ? "A call's CPU per mode (median of the timed calls)."
                     : "Measured parse + destroy of a call's messages, per "
                       "mode.");
  for (const MeasuredMethodStats& a : methods) {
    for (int m = 0; m < kNumAllocationModes; ++m) {
      w.Value(p + "cost_microseconds",
              absl::StrCat(method(a), ",", ModeLabel(m)), a.cost_us[m]);
    }
  }
  if (!automatic) {
    w.Family(
        p + "saving_microseconds", "gauge",
        "Estimated CPU per call saved by switching to the recommended mode.");
    for (const MeasuredMethodStats& a : methods) {
      w.Value(p + "saving_microseconds",
              absl::StrCat(method(a), ",", ModeLabel(static_cast<int>(a.mode))),
              a.saving_us);
    }
  }
  RenderMeasuredCounters(w, p, automatic, methods);
}

// Calls per mode and the arena-bytes histogram.
void RenderCalls(Writer& w, const GrpcStats& gs) {
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
  const GrpcModeStats& arena =
      gs.modes[static_cast<int>(AllocationMode::kArena)];
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
}

// Reuse, the pooled-memory cap, idle trimming, measuring's CPU.
void RenderMemory(Writer& w, const GrpcStats& gs) {
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
       gs.idle_trims},
      {"arenarpc_grpc_background_thread_failures_total",
       "Background threads that could not start.",
       gs.background_thread_failures}};
  for (const auto& c : trim_counters) w.One(c.name, "counter", c.help, c.value);
  if (!gs.auto_methods.empty() || !gs.shadow_methods.empty()) {
    w.Family("arenarpc_grpc_measuring_cpu_seconds_total", "counter",
             "CPU spent measuring: the background thread, call threads "
             "serializing shadow's samples, kAuto's learning.");
    w.Value("arenarpc_grpc_measuring_cpu_seconds_total", "part=\"thread\"",
            gs.measuring.thread_cpu_s);
    w.Value("arenarpc_grpc_measuring_cpu_seconds_total", "part=\"sampling\"",
            gs.measuring.sampling_cpu_s);
    w.Value("arenarpc_grpc_measuring_cpu_seconds_total", "part=\"learning\"",
            gs.measuring.learning_cpu_s);
  }
}

// StreamArenas and StreamMessages.
void RenderStreams(Writer& w) {
  const StreamArenaTotals st = GetStreamArenaTotals();
  w.One("arenarpc_grpc_stream_arenas", "gauge", "StreamArenas alive.",
        st.streams);
  w.One("arenarpc_grpc_stream_arenas_total", "counter",
        "StreamArenas constructed.", st.streams_created);
  w.One("arenarpc_grpc_stream_messages_total", "counter",
        "Messages made on StreamArenas.", st.messages);
  w.One("arenarpc_grpc_stream_generations_total", "counter",
        "Pooled arenas StreamArenas used (one per generation).",
        st.generations);
  w.One("arenarpc_grpc_stream_live_messages", "gauge", "StreamMessages alive.",
        st.live_messages);
  w.One("arenarpc_grpc_stream_live_generations", "gauge",
        "StreamArena generations holding an arena now.", st.live_generations);
  // StreamMessages (streaming.h).
  const StreamTotals sm = GetStreamTotals();
  w.One("arenarpc_grpc_streaming_streams", "gauge",
        "StreamMessages alive (a stream's direction each).", sm.streams);
  w.One("arenarpc_grpc_streaming_streams_total", "counter",
        "StreamMessages made.", sm.streams_opened);
  w.Family("arenarpc_grpc_streaming_messages_total", "counter",
           "Streamed messages handed out, by the mode each ran in.");
  for (int m = 0; m < kNumAllocationModes; ++m) {
    w.Sample("arenarpc_grpc_streaming_messages_total", ModeLabel(m),
             sm.messages[m]);
  }
  w.One("arenarpc_grpc_streaming_live_messages", "gauge",
        "Streamed messages handed out and not yet released.", sm.live_messages);
  w.One("arenarpc_grpc_streaming_arena_resets_total", "counter",
        "Arena messages of streams released (their pages recycled).",
        sm.arena_resets);
  w.One("arenarpc_grpc_streaming_arena_bytes_total", "counter",
        "Arena bytes of released stream messages, summed.", sm.arena_bytes);
  w.One("arenarpc_grpc_streaming_sampled_total", "counter",
        "Streamed messages sampled by shadow measurement.", sm.sampled);
}

// Per served method: its mode, and the calls shed.
void RenderMethods(Writer& w, const GrpcStats& gs) {
  if (!gs.methods.empty()) {
    w.Family("arenarpc_grpc_method_mode", "gauge",
             "1 per served method: its API, installed mode and the mode its "
             "calls run in now.");
    for (const ServedMethodStats& m : gs.methods) {
      w.Sample(
          "arenarpc_grpc_method_mode",
          absl::StrCat("method=\"", PrometheusEscape(m.method), "\",api=\"",
                       std::string(ServerApiName(m.api)), "\",installed=\"",
                       std::string(AllocationModeName(m.installed)), "\",",
                       ModeLabel(static_cast<int>(m.mode))),
          1);
    }
  }
  if (!gs.methods.empty()) {
    w.Family("arenarpc_grpc_shed_calls_total", "counter",
             "Calls answered without their handler (sync: without parsing "
             "their request): nobody waited, the deadline had passed.");
    for (const ServedMethodStats& m : gs.methods) {
      w.Sample("arenarpc_grpc_shed_calls_total",
               absl::StrCat("method=\"", PrometheusEscape(m.method),
                            "\",reason=\"deadline\""),
               m.shed_deadline);
    }
  }
}

}  // namespace

std::string RenderPrometheusStats() {
  std::string out;
  AppendPrometheusText(&out);  // page pool, arenas, message and object pools
  Writer w(&out);
  const GrpcStats gs = GetGrpcStats();
  RenderCalls(w, gs);
  RenderMemory(w, gs);
  RenderStreams(w);
  RenderMethods(w, gs);
  w.One("arenarpc_grpc_sync_parked_calls", "gauge",
        "Sync calls received and not yet handled (0 at rest).", gs.sync_parked);
  RenderMeasured(w, "auto", gs.auto_methods);
  RenderMeasured(w, "shadow", gs.shadow_methods);
  return out;
}

}  // namespace arenarpc
