// kAuto's decisions, remembered: written to a file and loaded at start-up,
// so a restarted server or a new replica starts settled and only re-checks
// (AutoOptions::decisions_path does both on its own; these are the
// explicit calls).
//
//   arenarpc::ServerOptions options(arenarpc::AllocationMode::kAuto);
//   options.automatic.decisions_path = "/var/lib/mysvc/auto_decisions.json";
//   r = mysvc::InstallMyServiceAllocators(&service, options);
//   ...
//   absl::Status s = arenarpc::SaveAutoDecisions(
//       options.automatic.decisions_path);  // e.g. at shutdown
//
// The file: JSON (protobuf's json_util over google.protobuf.Struct), one
// entry per method:
//   {"format": "arenarpc auto decisions", "version": 1, "decisions": [
//     {"method": "pkg.Service/Method", "request_type": "pkg.Req",
//      "response_type": "pkg.Resp", "schema": "<16 hex digits>",
//      "protobuf": 3021012, "mode": "reuse", "source": "prior",
//      "cost_us": {"heap": 0, "arena": 1900.5, "reuse": 1302.1},
//      "calls": 24, "saved_unix_s": 1795000000}]}
// `schema` is a fingerprint of the request's and response's descriptors
// (every message type they reach): a changed .proto changes it. `protobuf`
// is GOOGLE_PROTOBUF_VERSION of the writer. An entry is taken only if its
// method is a kAuto method of this process with the same types, schema and
// protobuf version, and its mode is heap, arena or reuse; any other entry
// is ignored with one line on stderr (an entry of a method this process
// does not install is kept for the next save, silently at install).
//
// Thread safety: every function may be called from any thread.
#ifndef ARENARPC_GRPC_AUTO_DECISIONS_H_
#define ARENARPC_GRPC_AUTO_DECISIONS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace arenarpc {

// Writes every kAuto method's decision (learned, taken with the prior, or
// loaded; methods still learning their first are left out), plus the
// entries kept from a file loaded earlier for methods not installed here,
// to `path`: a temporary file in the same directory, then rename(), so a
// reader sees the old file or the new one, never a part. Errors: the
// file's (e.g. PermissionDenied, NotFound for a missing directory).
absl::Status SaveAutoDecisions(const std::string& path);

// Reads `path` and starts every kAuto method installed so far that has not
// decided yet and has a matching entry in that entry's mode (settled,
// source kLoaded, re-checked recheck_after_s later). Returns how many
// methods it started. Errors, the file left alone: NotFound (no file),
// PermissionDenied or Internal (unreadable), InvalidArgument (not this
// format: bad JSON, a missing or mistyped field at the top level),
// FailedPrecondition (a newer file-format version). Entries that do not
// match are not errors: each is skipped with one line on stderr.
absl::StatusOr<int> LoadAutoDecisions(const std::string& path);

}  // namespace arenarpc

#endif  // ARENARPC_GRPC_AUTO_DECISIONS_H_
