#include "report.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace arenarpc::advise {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

constexpr AllocationMode kModes[] = {
    AllocationMode::kHeap, AllocationMode::kArena, AllocationMode::kReuse};

// Three decimals: microseconds to the nanosecond, shares to 0.1%.
double Round(double x) { return std::round(x * 1000) / 1000; }

void Put(Struct& s, const std::string& key, double x) {
  (*s.mutable_fields())[key].set_number_value(Round(x));
}
void Put(Struct& s, const std::string& key, std::string_view text) {
  (*s.mutable_fields())[key].set_string_value(std::string(text));
}

}  // namespace

std::string FormatTable(const Advice& a) {
  std::string out;
  for (const std::string& w : a.warnings)
    absl::StrAppend(&out, "warning: ", w, "\n");
  absl::StrAppendFormat(&out, "%s  (protobuf %s, code: %s)\n", a.type,
                        a.protobuf, a.code);
  absl::StrAppendFormat(
      &out,
      "%d samples, %.0f wire bytes on average; heap mode: %.1f allocations, "
      "%.0f bytes per message\n",
      a.samples, a.wire_bytes_mean, a.allocs_per_message,
      a.alloc_bytes_per_message);
  absl::StrAppendFormat(
      &out, "server CPU per call outside parse+destroy: %.1f us (%s)\n\n",
      a.base_us,
      a.base_from == "model"
          ? absl::StrFormat("model: %g us + %g us per wire byte; "
                            "--baseline_cpu_us gives yours",
                            kBaseUs, kBaseUsPerWireByte)
          : "from --baseline_cpu_us");
  absl::StrAppendFormat(&out, "%-6s %18s %16s %12s %8s\n", "mode",
                        "parse+destroy us", "cpu us per call", "saving us",
                        "saving");
  for (AllocationMode m : kModes) {
    const ModeAdvice& x = a.modes[static_cast<int>(m)];
    absl::StrAppendFormat(&out, "%-6s %18.2f %16.2f %12.2f %7.1f%%\n",
                          AllocationModeName(m), x.parse_destroy_us,
                          x.cpu_us_per_call, x.saving_us, 100 * x.saving_share);
  }
  absl::StrAppendFormat(
      &out, "\nauto would choose: %s%s\nrecommended: %s\nreason: %s\n",
      AllocationModeName(a.auto_choice),
      a.samples < ModeSamples::kPerMode
          ? " (undecided: fewer samples than it needs, so its starting mode)"
          : "",
      AllocationModeName(a.recommended), a.reason);
  return out;
}

// protobuf's JSON printer over a Struct: the tool links it anyway, and it
// escapes strings (type names, file paths in warnings) correctly.
std::string FormatJson(const Advice& a) {
  Struct root;
  Put(root, "type", a.type);
  Put(root, "protobuf", a.protobuf);
  Put(root, "code", a.code);
  Put(root, "samples", a.samples);
  Put(root, "wire_bytes_mean", a.wire_bytes_mean);
  Put(root, "allocs_per_message", a.allocs_per_message);
  Put(root, "alloc_bytes_per_message", a.alloc_bytes_per_message);
  Struct& modes = *(*root.mutable_fields())["modes"].mutable_struct_value();
  for (AllocationMode m : kModes) {
    const ModeAdvice& x = a.modes[static_cast<int>(m)];
    Struct& mode =
        *(*modes.mutable_fields())[std::string(AllocationModeName(m))]
             .mutable_struct_value();
    Put(mode, "parse_destroy_us", x.parse_destroy_us);
    Put(mode, "cpu_us_per_call", x.cpu_us_per_call);
    Put(mode, "saving_us", x.saving_us);
    Put(mode, "saving_share", x.saving_share);
  }
  Put(root, "auto", AllocationModeName(a.auto_choice));
  Put(root, "recommended", AllocationModeName(a.recommended));
  Put(root, "reason", a.reason);
  Put(root, "base_us", a.base_us);
  Put(root, "base_from", a.base_from);
  Put(root, "reuse_limit", a.reuse_limit);
  auto& warnings = *(*root.mutable_fields())["warnings"].mutable_list_value();
  for (const std::string& w : a.warnings)
    warnings.add_values()->set_string_value(w);

  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  if (!google::protobuf::util::MessageToJsonString(root, &json, options).ok()) {
    return "{}";  // a Struct of finite numbers and strings always prints
  }
  return json;
}

}  // namespace arenarpc::advise
