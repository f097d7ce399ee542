// arenarpc_advise: which allocation mode (heap, arena, reuse) a protobuf
// service's requests gain from, measured on its own samples before
// deploying anything. See advise.h and docs/ADVISE.md.
//
//   arenarpc_advise --descriptor_set=service.pb --type=pkg.Request
//       --samples=DIR [--json]
//
// Exit codes: 0 advice printed, 2 bad input (flags, schema, type,
// samples), 1 the measurement could not run (generated code, I/O).
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "advise.h"
#include "report.h"
#include "schema.h"

ABSL_FLAG(std::string, descriptor_set, "",
          "FileDescriptorSet of the service (protoc --descriptor_set_out "
          "--include_imports)");
ABSL_FLAG(std::vector<std::string>, proto, {},
          "or: .proto files, comma-separated");
ABSL_FLAG(std::vector<std::string>, proto_path, {},
          "import directories for --proto");
ABSL_FLAG(std::string, type, "",
          "full name of the message type; default: the samples' TYPE file (a "
          "capture)");
ABSL_FLAG(std::string, samples, "",
          "directory of sample messages, one per *.bin file");
ABSL_FLAG(int, max_samples, 200, "use the first N sample files by name");
ABSL_FLAG(int, rounds, 3, "timing rounds per sample (the minimum is kept)");
ABSL_FLAG(bool, json, false, "print one JSON object instead of a table");
ABSL_FLAG(std::string, code, "auto",
          "generated (build the schema's C++ code), dynamic (DynamicMessage, "
          "calibrated) or "
          "auto (generated when it can be built)");
ABSL_FLAG(std::string, protoc, "",
          "protoc for --code=generated (default: the build's)");
ABSL_FLAG(std::string, cxx, "",
          "C++ compiler for --code=generated (default: the build's)");
ABSL_FLAG(std::string, cxxflags, "", "extra compiler flags, e.g. -O1");
ABSL_FLAG(std::string, cache_dir, "",
          "where built code is cached (default "
          "${XDG_CACHE_HOME:-~/.cache}/arenarpc/advise)");
ABSL_FLAG(std::optional<double>, baseline_cpu_us, std::nullopt,
          "the service's measured server CPU per call today, in microseconds "
          "(heap mode)");

namespace {

int Fail(const absl::Status& status) {
  std::cerr << "arenarpc_advise: " << status.message() << "\n";
  const bool input = status.code() == absl::StatusCode::kInvalidArgument ||
                     status.code() == absl::StatusCode::kNotFound;
  return input ? 2 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "which allocation mode a protobuf service gains from, on its own "
      "samples:\n"
      "  arenarpc_advise --descriptor_set=FILE --type=FULL.MESSAGE.NAME "
      "--samples=DIR [--json]");
  std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() > 1) {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("unexpected argument ", rest[1])));
  }
  namespace advise = arenarpc::advise;
  advise::AdviseOptions options;
  options.type = absl::GetFlag(FLAGS_type);
  options.samples_dir = absl::GetFlag(FLAGS_samples);
  options.max_samples = absl::GetFlag(FLAGS_max_samples);
  options.rounds = absl::GetFlag(FLAGS_rounds);
  options.baseline_cpu_us = absl::GetFlag(FLAGS_baseline_cpu_us);
  options.build.protoc = absl::GetFlag(FLAGS_protoc);
  options.build.cxx = absl::GetFlag(FLAGS_cxx);
  options.build.cxxflags = absl::GetFlag(FLAGS_cxxflags);
  options.build.cache_dir = absl::GetFlag(FLAGS_cache_dir);
  const std::string code = absl::GetFlag(FLAGS_code);
  if (code == "generated") {
    options.code = advise::Code::kGenerated;
  } else if (code == "dynamic") {
    options.code = advise::Code::kDynamic;
  } else if (code != "auto") {
    return Fail(
        absl::InvalidArgumentError("--code: generated, dynamic or auto"));
  }
  if (options.samples_dir.empty()) {
    return Fail(absl::InvalidArgumentError("--samples=DIR is required"));
  }

  const std::string set = absl::GetFlag(FLAGS_descriptor_set);
  const std::vector<std::string> protos = absl::GetFlag(FLAGS_proto);
  if (set.empty() == protos.empty()) {
    return Fail(
        absl::InvalidArgumentError("give one of --descriptor_set and --proto"));
  }
  absl::StatusOr<std::unique_ptr<advise::Schema>> schema =
      !set.empty()
          ? advise::LoadDescriptorSet(set)
          : advise::LoadProtos(protos, absl::GetFlag(FLAGS_proto_path));
  if (!schema.ok()) return Fail(schema.status());

  absl::StatusOr<advise::Advice> advice = advise::Advise(**schema, options);
  if (!advice.ok()) return Fail(advice.status());
  if (absl::GetFlag(FLAGS_json)) {
    for (const std::string& w : advice->warnings)
      std::cerr << "arenarpc_advise: warning: " << w << "\n";
    std::cout << advise::FormatJson(*advice) << "\n";
  } else {
    std::cout << advise::FormatTable(*advice);
  }
  return 0;
}
