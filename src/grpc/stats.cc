#include "arenarpc/grpc/stats.h"

#include <algorithm>
#include <atomic>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "arenarpc/grpc/install.h"
#include "arenarpc/grpc/internal/counters.h"
#include "arenarpc/grpc/internal/shed.h"
#include "arenarpc/grpc/stream.h"
#include "arenarpc/grpc/streaming.h"
#include "arenarpc/internal/striped_counter.h"
#include "arenarpc/metrics.h"
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

ModeCounters& Counters(AllocationMode mode) {
  static ModeCounters* const counters = new ModeCounters[kNumAllocationModes];
  return counters[static_cast<int>(mode)];
}

// The upper bound of the bucket holding the q-quantile; 0 if no calls.
uint64_t Percentile(const std::array<uint64_t, kArenaBytesBuckets>& buckets,
                    double q) {
  const std::optional<size_t> b = internal::PercentileBucket(buckets, q);
  if (!b.has_value()) return 0;
  return *b + 1 < kArenaBytesBuckets ? kArenaBytesBucketBounds[*b]
                                     : UINT64_MAX;  // +Inf bucket
}

struct InstalledMethod {
  ServerApi api;
  AllocationMode installed;
  const internal::AutoMethod* automatic;
};
struct InstalledRegistry {
  internal::Mutex mu;
  // By method name: installing the same method again updates its entry.
  std::map<std::string, InstalledMethod> methods ABSL_GUARDED_BY(mu);
};
InstalledRegistry& Installed() {
  static auto* const registry = new InstalledRegistry;
  return *registry;
}

}  // namespace

namespace internal {

void RecordAllocate(AllocationMode mode) { Counters(mode).allocated.Add(1); }

void RecordRelease(AllocationMode mode, uint64_t arena_bytes) {
  ModeCounters& c = Counters(mode);
  c.released.Add(1);
  if (mode != AllocationMode::kArena) return;
  c.arena_bytes_sum.fetch_add(arena_bytes, std::memory_order_relaxed);
  // The first bucket whose bound is >= the bytes; past the bounds: +Inf.
  const size_t bucket =
      std::ranges::lower_bound(kArenaBytesBucketBounds, arena_bytes) -
      kArenaBytesBucketBounds.begin();
  c.buckets[bucket].fetch_add(1, std::memory_order_relaxed);
}

void RecordFreeRequest(AllocationMode mode) {
  Counters(mode).free_requests.fetch_add(1, std::memory_order_relaxed);
}

MethodInstall Served(std::string_view method, ServerApi api,
                     AllocationMode mode, const AutoMethod* automatic) {
  {
    InstalledRegistry& r = Installed();
    MutexLock lock(&r.mu);
    r.methods[std::string(method)] = {api, mode, automatic};
  }
  return {.method = std::string(method),
          .served = true,
          .api = api,
          .mode = mode,
          .reason = ""};
}

bool SameMeasuring(const ServerOptions& a, const ServerOptions& b) {
  const auto key = [](const ServerOptions& o) {
    const AutoOptions& x = o.automatic;
    const ShadowOptions& s = o.shadow;
    return std::tie(x.max_cpu_share, x.recheck_after_s, x.prior.min_bytes,
                    x.prior.heap_ns_per_byte, x.decisions_path,
                    x.save_decisions, s.sample_one_in, s.max_cpu_share,
                    s.capture_dir, s.capture_max_files, s.capture_max_bytes);
  };
  return key(a) == key(b);
}

MethodInstall NotServed(std::string_view method, std::string reason,
                        bool unary) {
  return {.method = std::string(method),
          .unary = unary,
          .reason = std::move(reason)};
}

}  // namespace internal

std::vector<MeasuredMethodStats> GetMeasuredMethodStats() {
  std::vector<MeasuredMethodStats> out = internal::AutoMethodsStats();
  std::ranges::move(internal::ShadowMethodStats(), std::back_inserter(out));
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
  InstalledRegistry& r = Installed();
  internal::MutexLock lock(&r.mu);
  static const internal::ShedCounters kNone;  // a method none was shed of
  for (const auto& [name, m] : r.methods) {
    const internal::ShedCounters* shed =
        internal::ShedCountersFor(name, /*make=*/false);
    if (shed == nullptr) shed = &kNone;
    out.push_back({name, m.api, m.installed,
                   m.automatic != nullptr ? m.automatic->mode() : m.installed,
                   shed->deadline.load(std::memory_order_relaxed),
                   shed->limit.load(std::memory_order_relaxed)});
  }
  return out;
}

GrpcStats GetGrpcStats() {
  GrpcStats s;
  for (int m = 0; m < kNumAllocationModes; ++m) {
    ModeCounters& c = Counters(static_cast<AllocationMode>(m));
    GrpcModeStats& out = s.modes[m];
    const int64_t released = c.released.Sum();
    out.calls = static_cast<uint64_t>(released);
    out.in_flight = static_cast<uint64_t>(
        std::max<int64_t>(0, c.allocated.Sum() - released));
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
    s.reuse_in_use += p.stats.in_use;
    s.reuse_evictions += p.stats.evicted_by_guard + p.stats.dropped_idle;
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

using Writer = internal::PrometheusWriter;

std::string ModeLabel(int m) {
  return absl::StrCat(
      "mode=\"",
      std::string(AllocationModeName(static_cast<AllocationMode>(m))), "\"");
}

// method="..." and, if given, mode="...".
std::string MethodLabel(const std::string& method,
                        std::optional<AllocationMode> mode = std::nullopt) {
  return absl::StrCat(
      "method=\"", internal::PrometheusEscape(method), "\"",
      mode ? absl::StrCat(",", ModeLabel(static_cast<int>(*mode))) : "");
}

// A sample per mode, labelled `labels` and the mode: value(mode).
template <class F>
void PerMode(Writer& w, std::string_view name, const std::string& labels,
             F value) {
  for (int m = 0; m < kNumAllocationModes; ++m) {
    w.Sample(name,
             absl::StrCat(labels, labels.empty() ? "" : ",", ModeLabel(m)),
             value(m));
  }
}

// The measured methods' counters: kAuto's (`automatic`) or shadow's.
struct MeasuredCounter {
  bool automatic;
  const char* suffix;
  const char* help;
  uint64_t MeasuredMethodStats::*field;
};
using S = MeasuredMethodStats;
constexpr MeasuredCounter kMeasuredCounters[] = {
    {false, "samples_total", "Sampled calls measured.", &S::samples},
    {false, "switches_total", "Times the cheapest mode changed.", &S::switches},
    {false, "dropped_total",
     "Samples not measured: queue full or busy, CPU budget spent.",
     &S::dropped},
    {false, "malformed_total", "Sampled bytes that did not parse.",
     &S::malformed},
    {false, "captured_total",
     "Sampled requests written to the capture directory.", &S::captured},
    {true, "switches_total", "Decisions that changed the mode.", &S::switches},
    {true, "timed_calls_total", "Calls timed in a mode and observed.",
     &S::timed_calls},
    {true, "lost_calls_total",
     "Timed calls lost: a callback call that ended on another thread or "
     "around another call, an async call outside its window (not observed).",
     &S::lost_calls},
    {true, "failed_calls_total",
     "Timed calls that did not end OK (not observed).", &S::failed_calls},
    {true, "warming_calls_total",
     "Timed reuse calls on a new pooled instance (not observed).",
     &S::warming_calls},
};

// arenarpc_grpc_<kind>_*: kAuto's ("auto") or shadow measurement's methods.
void RenderMeasured(Writer& w, std::string_view kind,
                    const std::vector<MeasuredMethodStats>& methods) {
  if (methods.empty()) return;
  const bool automatic = kind == "auto";
  const std::string p = absl::StrCat("arenarpc_grpc_", std::string(kind), "_");
  const std::string pick = p + (automatic ? "chosen" : "recommended");
  w.Family(pick,
           automatic
               ? "kAuto: 1 for the mode chosen for a method, 0 for the others."
               : "Shadow: 1 for the mode measured cheapest for a method, 0 "
                 "for the others.");
  for (const S& a : methods) {
    PerMode(w, pick, MethodLabel(a.method), [&](int m) {
      return static_cast<int>(a.recommended) == m ? 1 : 0;
    });
  }
  if (automatic) {
    w.Family(p + "decision",
             "kAuto: 1 per method, labelled with the mode its calls run in "
             "and where that decision came from (learned: every mode "
             "measured; prior: heap held out; loaded: a decisions file; "
             "none: the first decision is being learned).");
    for (const S& a : methods) {
      w.Sample(p + "decision",
               absl::StrCat(MethodLabel(a.method, a.mode), ",source=\"",
                            DecisionSourceName(a.decision_source), "\""),
               1);
    }
  }
  w.Family(p + "cost_microseconds",
           automatic
               ? "A call's CPU per mode (median of the timed calls)."
               : "Measured parse + destroy of a call's messages, per mode.");
  for (const S& a : methods) {
    PerMode(w, p + "cost_microseconds", MethodLabel(a.method),
            [&](int m) { return a.cost_us[m]; });
  }
  if (!automatic) {
    w.Family(
        p + "saving_microseconds",
        "Estimated CPU per call saved by switching to the recommended mode.");
    for (const S& a : methods) {
      w.Sample(p + "saving_microseconds", MethodLabel(a.method, a.mode),
               a.saving_us);
    }
  }
  for (const MeasuredCounter& c : kMeasuredCounters) {
    if (c.automatic != automatic) continue;
    w.Family(p + c.suffix, c.help);
    for (const S& a : methods)
      w.Sample(p + c.suffix, MethodLabel(a.method), a.*c.field);
  }
}

// Calls per mode, the arena-bytes histogram, reuse, the pooled-memory cap,
// idle trimming, measuring's CPU.
void RenderCalls(Writer& w, const GrpcStats& gs) {
  static constexpr struct {
    const char* name;
    const char* help;
    uint64_t GrpcModeStats::*field;
  } kPerMode[] = {
      {"arenarpc_grpc_calls_total",
       "gRPC unary calls completed, by allocation mode.",
       &GrpcModeStats::calls},
      {"arenarpc_grpc_calls_in_flight",
       "gRPC unary calls holding messages now, by allocation mode.",
       &GrpcModeStats::in_flight},
      {"arenarpc_grpc_free_request_total",
       "Requests released early with FreeRequest().",
       &GrpcModeStats::free_request_calls},
  };
  for (const auto& f : kPerMode) {
    w.Family(f.name, f.help);
    PerMode(w, f.name, "", [&](int m) { return gs.modes[m].*f.field; });
  }
  const GrpcModeStats& arena =
      gs.modes[static_cast<int>(AllocationMode::kArena)];
  const std::string h = "arenarpc_grpc_arena_bytes_per_call";
  w.Family(h, "Arena bytes (request and response arenas) per arena-mode call.",
           "histogram");
  uint64_t cumulative = 0;
  for (int i = 0; i < kArenaBytesBuckets; ++i) {
    cumulative += arena.arena_bytes_buckets[i];
    const std::string le = i + 1 < kArenaBytesBuckets
                               ? absl::StrCat(kArenaBytesBucketBounds[i])
                               : "+Inf";
    w.Sample(h + "_bucket", absl::StrCat("le=\"", le, "\""), cumulative);
  }
  w.Sample(h + "_sum", "", arena.arena_bytes_sum);
  w.Sample(h + "_count", "", cumulative);
  w.Ones("arenarpc_grpc_",
         {{"reuse_hits_total",
           "Reuse-mode messages served by an existing pooled instance.",
           gs.reuse_hits},
          {"reuse_evictions_total",
           "Reuse-mode instances destroyed by the growth guard or idle bound.",
           gs.reuse_evictions},
          {"over_cap_heap_calls_total",
           "Calls given heap messages: pooled memory over max_pooled_bytes.",
           gs.over_cap_heap_calls},
          {"over_cap_trims_total",
           "Depot trims done because pooled memory was over max_pooled_bytes.",
           gs.over_cap_trims},
          {"idle_trims_total",
           "Trims done after the server was idle for idle_trim.idle_ms.",
           gs.idle_trims},
          {"background_thread_failures_total",
           "Background threads that could not start.",
           gs.background_thread_failures}});
  if (gs.auto_methods.empty() && gs.shadow_methods.empty()) return;
  const std::string cpu = "arenarpc_grpc_measuring_cpu_seconds_total";
  w.Family(cpu,
           "CPU spent measuring: the background thread, call threads "
           "serializing shadow's samples, kAuto's learning.");
  w.Sample(cpu, "part=\"thread\"", gs.measuring.thread_cpu_s);
  w.Sample(cpu, "part=\"sampling\"", gs.measuring.sampling_cpu_s);
  w.Sample(cpu, "part=\"learning\"", gs.measuring.learning_cpu_s);
}

void RenderStreams(Writer& w) {
  const StreamArenaTotals st = GetStreamArenaTotals();
  const StreamTotals sm = GetStreamTotals();
  w.Ones(
      "arenarpc_grpc_",
      {{"stream_arenas", "StreamArenas alive.", st.streams},
       {"stream_arenas_total", "StreamArenas constructed.", st.streams_created},
       {"stream_messages_total", "Messages made on StreamArenas.", st.messages},
       {"stream_generations_total",
        "Pooled arenas StreamArenas used (one per generation).",
        st.generations},
       {"stream_live_messages", "StreamMessages alive.", st.live_messages},
       {"stream_live_generations",
        "StreamArena generations holding an arena now.", st.live_generations},
       {"streaming_streams",
        "StreamMessages alive (a stream's direction each).", sm.streams},
       {"streaming_streams_total", "StreamMessages made.", sm.streams_opened}});
  const std::string messages = "arenarpc_grpc_streaming_messages_total";
  w.Family(messages, "Streamed messages handed out, by the mode each ran in.");
  PerMode(w, messages, "", [&](int m) { return sm.messages[m]; });
  w.Ones(
      "arenarpc_grpc_streaming_",
      {{"live_messages", "Streamed messages handed out and not yet released.",
        sm.live_messages},
       {"arena_resets_total",
        "Arena messages of streams released (their pages recycled).",
        sm.arena_resets},
       {"arena_bytes_total", "Arena bytes of released stream messages, summed.",
        sm.arena_bytes},
       {"sampled_total", "Streamed messages sampled by shadow measurement.",
        sm.sampled}});
}

// Per served method: its mode, and the calls shed.
void RenderMethods(Writer& w, const GrpcStats& gs) {
  if (gs.methods.empty()) return;
  w.Family("arenarpc_grpc_method_mode",
           "1 per served method: its API, installed mode and the mode its "
           "calls run in now.");
  for (const ServedMethodStats& m : gs.methods) {
    w.Sample("arenarpc_grpc_method_mode",
             absl::StrCat(MethodLabel(m.method), ",api=\"",
                          std::string(ServerApiName(m.api)), "\",installed=\"",
                          std::string(AllocationModeName(m.installed)), "\",",
                          ModeLabel(static_cast<int>(m.mode))),
             1);
  }
  w.Family("arenarpc_grpc_shed_calls_total",
           "Calls answered without their handler (sync: without parsing "
           "their request): nobody waited, the deadline had passed; or "
           "(unparsed) max_calls_in_flight were in flight.");
  for (const ServedMethodStats& m : gs.methods) {
    w.Sample("arenarpc_grpc_shed_calls_total",
             absl::StrCat(MethodLabel(m.method), ",reason=\"deadline\""),
             m.shed_deadline);
    w.Sample("arenarpc_grpc_shed_calls_total",
             absl::StrCat(MethodLabel(m.method), ",reason=\"limit\""),
             m.shed_limit);
  }
}

}  // namespace

std::string RenderPrometheusStats() {
  std::string out;
  AppendPrometheusText(&out);  // page pool, arenas, message and object pools
  Writer w(&out);
  const GrpcStats gs = GetGrpcStats();
  RenderCalls(w, gs);
  RenderStreams(w);
  RenderMethods(w, gs);
  w.Ones("arenarpc_grpc_",
         {{"sync_parked_calls",
           "Sync calls received and not yet handled (0 at rest).",
           gs.sync_parked}});
  RenderMeasured(w, "auto", gs.auto_methods);
  RenderMeasured(w, "shadow", gs.shadow_methods);
  return out;
}

}  // namespace arenarpc
