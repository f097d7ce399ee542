// kAuto's decisions file (arenarpc/grpc/auto_decisions.h): the entries,
// their JSON, the schema fingerprint, and the process's store of loaded
// files and the path decisions are saved to. Used by
// src/grpc/auto_method.cc (at install, on settling) and by the explicit
// calls.
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

// The file-format version written, and the newest one read.
inline constexpr int kDecisionFileVersion = 1;

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

// GOOGLE_PROTOBUF_VERSION of this build.
int64_t ProtobufVersion();

// 16 hex digits: FNV-1a 64 of the serialized DescriptorProto of every
// message type `request` and `response` reach, in order of full name.
std::string SchemaFingerprint(const google::protobuf::Descriptor* request,
                              const google::protobuf::Descriptor* response);

// The file's text. Whole-file problems are the status (InvalidArgument:
// not JSON or not this format; FailedPrecondition: a newer version); an
// entry that cannot be read is left out and its reason appended to
// `skipped` ("entry 3: ...").
absl::StatusOr<std::vector<DecisionEntry>> ParseDecisions(
    std::string_view json, std::vector<std::string>* skipped);
// The file's text for `entries`; InvalidArgument for a cost that is not a
// finite number, Internal where protobuf's JSON printer refuses the rest.
absl::StatusOr<std::string> FormatDecisions(
    const std::vector<DecisionEntry>& entries);

// Why `entry` does not apply to the installed method `id` (same name):
// empty if it does.
std::string Mismatch(const DecisionEntry& entry, const DecisionEntry& id);

// At install of a kAuto method with AutoOptions::decisions_path `path`:
// reads the file once per process and path (a file that cannot be read or
// parsed: one line on stderr), and returns the entry of the method `id`
// if it matches (one that does not: one line on stderr). With `save`, the
// first such path is where decisions are saved.
std::optional<DecisionEntry> DecisionAtInstall(const std::string& path,
                                               bool save,
                                               const DecisionEntry& id);
// An installed method's identity (mode and costs left empty).
DecisionEntry IdentityOf(const std::string& method,
                         const google::protobuf::Descriptor* request,
                         const google::protobuf::Descriptor* response);

// A method settled a decision: saved to the install's path (if any) off
// the call path, at most once a second.
void DecisionSettled();

// Implemented in src/grpc/auto_method.cc: every kAuto method's identity
// and decision (source kNone: none yet), and starting one settled.
std::vector<DecisionEntry> AutoMethodDecisions();
bool LoadAutoMethodDecision(const DecisionEntry& entry);

}  // namespace arenarpc::internal

#endif  // ARENARPC_SRC_GRPC_DECISION_FILE_H_
