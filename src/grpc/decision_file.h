// kAuto's decisions file (arenarpc/grpc/auto_decisions.h): its entries, their
// JSON, the schema fingerprint, reading and writing the file. Which methods
// load and save what: src/grpc/auto_method.cc.
//
// Thread safety: every function may be called from any thread.
#ifndef ARENARPC_SRC_GRPC_DECISION_FILE_H_
#define ARENARPC_SRC_GRPC_DECISION_FILE_H_

#include <google/protobuf/descriptor.h>

#include <array>
#include <cstdint>
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

// 16 hex digits: FNV-1a 64 of the serialized DescriptorProto of every
// message type `request` and `response` reach, in order of full name.
std::string SchemaFingerprint(const google::protobuf::Descriptor* request,
                              const google::protobuf::Descriptor* response);
// An installed method's identity (mode and costs left empty).
DecisionEntry IdentityOf(const std::string& method,
                         const google::protobuf::Descriptor* request,
                         const google::protobuf::Descriptor* response);
// Why `entry` does not apply to the method `id` (same name); empty if it does.
std::string Mismatch(const DecisionEntry& entry, const DecisionEntry& id);

// The file's entries. Errors: InvalidArgument (not JSON, not this format),
// FailedPrecondition (a newer version). An entry that cannot be read is
// left out, its reason appended to `skipped` ("entry 3: ...").
absl::StatusOr<std::vector<DecisionEntry>> ParseDecisions(
    std::string_view json, std::vector<std::string>* skipped);
// InvalidArgument for a cost that is not a finite number.
absl::StatusOr<std::string> FormatDecisions(
    const std::vector<DecisionEntry>& entries);

// The entries of the file at `path` (each one skipped: a line on stderr).
absl::StatusOr<std::vector<DecisionEntry>> ReadDecisions(
    const std::string& path);
// `entries` to `path`, atomically: a reader sees the old file or the new.
absl::Status WriteDecisions(const std::string& path,
                            const std::vector<DecisionEntry>& entries);

}  // namespace arenarpc::internal

#endif  // ARENARPC_SRC_GRPC_DECISION_FILE_H_
