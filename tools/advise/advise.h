// arenarpc_advise as a library: what each allocation mode (heap, arena,
// reuse) would cost a service on its own sample requests, measured on
// generated code for its schema, and which mode to use.
//
//   // schema.h: a descriptor set (protoc --include_imports
//   // --descriptor_set_out), or .proto files with LoadProtos().
//   auto schema = arenarpc::advise::LoadDescriptorSet("service.pb");
//   arenarpc::advise::AdviseOptions options;
//   options.type = "pkg.Request";  // or "" with a capture's TYPE file
//   options.samples_dir = "capture/pkg.Service.Method";
//   absl::StatusOr<arenarpc::advise::Advice> a =
//       arenarpc::advise::Advise(**schema, options);
//   if (a.ok()) std::cout << arenarpc::advise::FormatTable(*a);  // report.h
//
// Code: generated code is built and loaded at run time (codegen.h) unless
// the program already links it; Code::kDynamic measures DynamicMessage and
// scales by calibration.h's factors (approximate); Code::kAuto falls back
// to that when generated code cannot be built, with a warning.
//
// Heap allocations are counted by alloc_count.cc, which replaces the global
// operator new of any program linking this library.
//
// Thread safety: Advise() from one thread at a time (it may load code into
// the process, and times with the calling thread's CPU clock; other busy
// threads on the machine add noise, not bias). Lifetime: `schema` must
// outlive the call only; an Advice owns its data.
#ifndef ARENARPC_TOOLS_ADVISE_ADVISE_H_
#define ARENARPC_TOOLS_ADVISE_ADVISE_H_

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "arenarpc/allocation_mode.h"
#include "arenarpc/cost_probe.h"
#include "codegen.h"
#include "schema.h"

namespace arenarpc::advise {

enum class Code { kAuto, kGenerated, kDynamic };

// The server CPU per call outside parse + destroy, when the user gives no
// measurement: base_us = kBaseUs + kBaseUsPerWireByte * wire bytes. Fit on
// the corpus end to end (plain gRPC CPU per call minus heap parse +
// destroy, 9 services, ghz at 20-1000 calls/s on this 2-core VM):
// docs/raw/advise/base_fit.txt. Machine- and rate-dependent: pass
// --baseline_cpu_us for your own.
inline constexpr double kBaseUs = 337.0;
inline constexpr double kBaseUsPerWireByte = 0.0047;

struct AdviseOptions {
  std::string type;  // full message name; "" takes the samples' TYPE file
  std::string samples_dir;
  int max_samples = 200;  // the first N files by name; <= 0: all
  int rounds = 3;         // CostProbe rounds per sample (minimum kept)
  Code code = Code::kAuto;
  BuildOptions build;
  // The service's measured CPU per call today (heap mode, no arenarpc).
  std::optional<double> baseline_cpu_us;
};

struct ModeAdvice {
  double parse_destroy_us = 0;  // mean per message
  double cpu_us_per_call = 0;   // base_us + parse_destroy_us
  double saving_us = 0;         // heap's cpu_us_per_call minus this one's
  double saving_share = 0;      // saving_us / heap's cpu_us_per_call
};

struct Advice {
  std::string type;
  std::string protobuf;  // runtime version, e.g. "3.21.12"
  std::string code;      // "generated", or "dynamic (calibrated, ...)"
  std::vector<std::string> warnings;
  int samples = 0;
  double wire_bytes_mean = 0;
  double allocs_per_message = 0;       // heap mode, operator new calls
  double alloc_bytes_per_message = 0;  // heap mode, bytes asked for
  std::array<ModeAdvice, kNumAllocationModes> modes;    // by AllocationMode
  AllocationMode auto_choice = AllocationMode::kArena;  // kAuto's rule's pick
  AllocationMode recommended = AllocationMode::kHeap;
  std::string reason;  // one line
  double base_us = 0;
  std::string base_from;    // "baseline_cpu_us" or "model"
  std::string reuse_limit;  // ReuseLimit() of the type, "" if none
  // What the recommendation was computed from (calibrated if dynamic),
  // one entry per sample; recommend.h's Recommend() on it gives
  // `recommended` again.
  std::vector<ModeCosts> per_sample;
};

// Errors: NotFound (samples directory, type), InvalidArgument (no sample
// files, a sample that does not parse: the message names the file),
// FailedPrecondition / Unavailable (generated code, Code::kGenerated).
absl::StatusOr<Advice> Advise(const Schema& schema,
                              const AdviseOptions& options);

}  // namespace arenarpc::advise

#endif  // ARENARPC_TOOLS_ADVISE_ADVISE_H_
