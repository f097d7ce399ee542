#include "advise.h"

#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/message.h>
#include <google/protobuf/stubs/common.h>

#include <cmath>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "alloc_count.h"
#include "arenarpc/message_pool.h"
#include "calibration.h"
#include "recommend.h"
#include "samples.h"

namespace arenarpc::advise {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::Message;

int Index(AllocationMode m) { return static_cast<int>(m); }

std::string Percent(double share) {
  return absl::StrFormat("%.0f%%", 100 * share);
}

// The one-line why, from the verdict, the sizes and ReuseLimit().
std::string Reason(const Advice& a, const Verdict& v) {
  const ModeAdvice& heap = a.modes[Index(AllocationMode::kHeap)];
  const ModeAdvice& arena = a.modes[Index(AllocationMode::kArena)];
  const ModeAdvice& reuse = a.modes[Index(AllocationMode::kReuse)];
  const std::string version =
      google::protobuf::internal::VersionString(GOOGLE_PROTOBUF_VERSION);
  switch (a.recommended) {
    case AllocationMode::kReuse:
      return absl::StrCat(
          a.reuse_limit.empty() ? "Clear() keeps the whole message: " : "",
          "reuse saves ", Percent(-v.reuse_vs_arena.mean),
          " of arena's cost and ", absl::StrFormat("%.1f", reuse.saving_us),
          " us (", Percent(reuse.saving_share),
          ") per call against heap; use reuse");
    case AllocationMode::kArena:
      if (!a.reuse_limit.empty()) {
        return absl::StrCat(
            "reuse cannot keep ", a.reuse_limit, " on protobuf ", version,
            "; arena saves ", absl::StrFormat("%.1f", arena.saving_us), " us (",
            Percent(arena.saving_share), ") per call; use arena");
      }
      return absl::StrCat(
          "arena saves ", absl::StrFormat("%.1f", arena.saving_us), " us (",
          Percent(arena.saving_share),
          ") per call; reuse is not cheaper than arena by more than ",
          Percent(kMargin), "; use arena");
    default:
      break;
  }
  const std::string measured = absl::StrFormat(
      "arena %+.0f%%, reuse %+.0f%% of heap's %.1f us parse+destroy",
      100 * v.arena_vs_heap.mean, 100 * v.reuse_vs_heap.mean,
      heap.parse_destroy_us);
  if (v.arena_vs_heap.mean > -kMargin) {
    return absl::StrFormat(
        "messages are small or cheap to build (%.1f KB, %.0f allocations): "
        "an arena costs about what the allocations it saves cost (%s); stay "
        "on heap",
        a.wire_bytes_mean / 1024, a.allocs_per_message, measured);
  }
  return absl::StrFormat(
      "%s: cheaper on average, but not beyond the measured spread of %d "
      "samples; stay on heap (more samples may decide)",
      measured, a.samples);
}

}  // namespace

absl::StatusOr<Advice> Advise(const Schema& schema,
                              const AdviseOptions& options) {
  absl::StatusOr<Samples> samples =
      ReadSamples(options.samples_dir, options.max_samples);
  if (!samples.ok()) return samples.status();
  Advice a;
  a.type = !options.type.empty() ? options.type : samples->type;
  if (a.type.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "no type: give --type or put a TYPE file in ", options.samples_dir));
  }
  if (schema.pool.FindMessageTypeByName(a.type) == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("unknown type ", a.type, " (not in the schema)"));
  }
  a.protobuf =
      google::protobuf::internal::VersionString(GOOGLE_PROTOBUF_VERSION);

  // The prototype: generated code, else (dynamic, or auto's fallback)
  // DynamicMessage over the schema's own pool.
  const Message* prototype = nullptr;
  google::protobuf::DynamicMessageFactory dynamic_factory(&schema.pool);
  if (options.code != Code::kDynamic) {
    absl::StatusOr<BuildResult> built =
        LoadGeneratedCode(schema, options.build);
    if (built.ok()) {
      const Descriptor* d = google::protobuf::DescriptorPool::generated_pool()
                                ->FindMessageTypeByName(a.type);
      if (d != nullptr) {
        prototype =
            google::protobuf::MessageFactory::generated_factory()->GetPrototype(
                d);
      }
      a.code = built->object.empty() ? "generated (linked)"
               : built->from_cache
                   ? "generated (cached)"
                   : absl::StrFormat("generated (compiled in %.1f s)",
                                     built->compile_seconds);
      if (prototype == nullptr)
        built = absl::InternalError(a.type + ": no generated prototype");
    }
    if (!built.ok()) {
      if (options.code == Code::kGenerated) return built.status();
      a.warnings.push_back(
          absl::StrCat("generated code unavailable, measuring DynamicMessage (",
                       built.status().message(), ")"));
    }
  }
  const bool dynamic = prototype == nullptr;
  if (dynamic) {
    prototype =
        dynamic_factory.GetPrototype(schema.pool.FindMessageTypeByName(a.type));
    a.code = absl::StrFormat("dynamic (calibrated, expect +-%.0f%%)",
                             100 * kCalibrationSpread);
  }
  a.reuse_limit = internal::ReuseLimit(prototype->GetDescriptor());

  // Every sample must parse before anything is timed.
  for (const Sample& s : samples->samples) {
    std::unique_ptr<Message> m(prototype->New());
    if (!m->ParseFromString(s.wire)) {
      return absl::InvalidArgumentError(
          absl::StrCat(s.path, ": not a valid ", a.type, " (parse failed)"));
    }
  }

  // calibration.h: reuse of a type Clear() cannot keep whole is an arena.
  std::array<double, kNumAllocationModes> factors = kGeneratedPerDynamic;
  if (!a.reuse_limit.empty()) {
    factors[Index(AllocationMode::kReuse)] =
        factors[Index(AllocationMode::kArena)];
  }
  CostProbe probe(prototype);
  ModeSamples costs;  // kAuto's rule, for `auto_choice`
  double wire = 0, allocs = 0, alloc_bytes = 0;
  std::array<double, kNumAllocationModes> ns = {};
  for (const Sample& s : samples->samples) {
    // Heap mode's allocations, after the check's parse warmed the type.
    const AllocCount before = ThreadAllocCount();
    {
      std::unique_ptr<Message> m(prototype->New());
      // The check above parsed every sample already; only its cost counts.
      (void)m->ParseFromString(s.wire);
    }
    const AllocCount n = ThreadAllocCount() - before;
    allocs += static_cast<double>(n.objects);
    alloc_bytes += static_cast<double>(n.bytes);
    wire += static_cast<double>(s.wire.size());

    ModeCosts c = probe.Measure(s.wire, options.rounds);
    if (dynamic) {
      for (int m = 0; m < kNumAllocationModes; ++m) c.ns[m] *= factors[m];
    }
    for (int m = 0; m < kNumAllocationModes; ++m) {
      costs.Add(static_cast<AllocationMode>(m), c.ns[m]);
      ns[m] += c.ns[m];
    }
    a.per_sample.push_back(c);
  }
  const double count = static_cast<double>(samples->samples.size());
  a.samples = static_cast<int>(samples->samples.size());
  a.wire_bytes_mean = wire / count;
  a.allocs_per_message = allocs / count;
  a.alloc_bytes_per_message = alloc_bytes / count;
  // From arena, where kAuto starts (its prior left out).
  a.auto_choice = costs
                      .Cheapest(ModeSamples::kPerMode, AllocationMode::kArena,
                                ModeSamples::kMargin)
                      .value_or(AllocationMode::kArena);

  const double heap_us = ns[Index(AllocationMode::kHeap)] / count / 1e3;
  if (options.baseline_cpu_us.has_value()) {
    a.base_us = *options.baseline_cpu_us - heap_us;
    a.base_from = "baseline_cpu_us";
    if (a.base_us < 0) {
      a.warnings.push_back(
          absl::StrFormat("--baseline_cpu_us=%g is below heap's parse+destroy "
                          "alone (%.1f us); base set to 0",
                          *options.baseline_cpu_us, heap_us));
      a.base_us = 0;
    }
  } else {
    a.base_us = kBaseUs + kBaseUsPerWireByte * a.wire_bytes_mean;
    a.base_from = "model";
  }
  for (int m = 0; m < kNumAllocationModes; ++m) {
    ModeAdvice& mode = a.modes[m];
    mode.parse_destroy_us = ns[m] / count / 1e3;
    mode.cpu_us_per_call = a.base_us + mode.parse_destroy_us;
  }
  const double heap_cpu = a.modes[Index(AllocationMode::kHeap)].cpu_us_per_call;
  for (ModeAdvice& mode : a.modes) {
    mode.saving_us = heap_cpu - mode.cpu_us_per_call;
    mode.saving_share = heap_cpu > 0 ? mode.saving_us / heap_cpu : 0;
  }
  const Verdict v = Recommend(a.per_sample);
  a.recommended = v.mode;
  a.reason = Reason(a, v);
  return a;
}

}  // namespace arenarpc::advise
