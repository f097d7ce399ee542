// kAuto's decisions file (arenarpc/grpc/auto_decisions.h): its entries and
// JSON, the schema fingerprint, and the process's store of files read and
// of the path decisions are saved to.
//
// Thread safety: every function may be called from any thread.
#ifndef ARENARPC_SRC_GRPC_DECISION_FILE_H_
#define ARENARPC_SRC_GRPC_DECISION_FILE_H_

#include <google/protobuf/descriptor.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "arenarpc/allocation_mode.h"

namespace arenarpc::internal {

// One method's decision, or (for matching) one installed method's identity.
struct DecisionEntry {
  std::string method;
  std::string request_type;
  std::string response_type;
  std::string schema;    // SchemaFingerprint()
  int64_t protobuf = 0;  // GOOGLE_PROTOBUF_VERSION of the writer
  AllocationMode mode = AllocationMode::kArena;
  DecisionSource source = DecisionSource::kLearned;
  std::array<double, kNumAllocationModes> cost_us = {};  // 0: not measured
  uint64_t calls = 0;
  double saved_unix_s = 0;
};

int64_t ProtobufVersion();  // this build's GOOGLE_PROTOBUF_VERSION
// 16 hex digits: FNV-1a 64 of the serialized DescriptorProto of every
// message type `request` and `response` reach, in order of full name.
std::string SchemaFingerprint(const google::protobuf::Descriptor* request,
                              const google::protobuf::Descriptor* response);
// An installed method's identity (mode and costs left empty).
DecisionEntry IdentityOf(const std::string& method,
                         const google::protobuf::Descriptor* request,
                         const google::protobuf::Descriptor* response);

// The file's entries. Errors: InvalidArgument (not JSON, not this format),
// FailedPrecondition (a newer version). An entry that cannot be read is
// left out, its reason appended to `skipped` ("entry 3: ...").
absl::StatusOr<std::vector<DecisionEntry>> ParseDecisions(
    std::string_view json, std::vector<std::string>* skipped);
// InvalidArgument for a cost that is not a finite number.
absl::StatusOr<std::string> FormatDecisions(
    const std::vector<DecisionEntry>& entries);

// At install with AutoOptions::decisions_path `path`: the file, read once
// per process and path, and its entry for `id` if it matches (a file or
// entry that does not: one line on stderr). With `save`, the first such
// path is where decisions are saved.
std::optional<DecisionEntry> DecisionAtInstall(const std::string& path,
                                               bool save,
                                               const DecisionEntry& id);
// A decision settled: saved to that path (if any) on the background
// thread, at most once a second.
void DecisionSettled();

// In src/grpc/auto_method.cc: every kAuto method's identity and decision
// (source kNone: none yet), and starting one settled in `entry`.
std::vector<DecisionEntry> AutoMethodDecisions();
void LoadAutoMethodDecision(const DecisionEntry& entry);

}  // namespace arenarpc::internal

#endif  // ARENARPC_SRC_GRPC_DECISION_FILE_H_
