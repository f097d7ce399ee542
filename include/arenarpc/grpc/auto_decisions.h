// kAuto's decisions, remembered: written to a file and loaded at start-up,
// so a restarted server or a new replica starts settled and only re-checks.
// AutoOptions::decisions_path does both on its own; these are explicit.
//
//   arenarpc::ServerOptions options(arenarpc::AllocationMode::kAuto);
//   options.automatic.decisions_path = "/var/lib/mysvc/auto_decisions.json";
//   r = mysvc::InstallMyServiceAllocators(&service, options);
//   ...
//   absl::Status s = arenarpc::SaveAutoDecisions(
//       options.automatic.decisions_path);  // e.g. at shutdown
//
// The file: JSON, one entry per method (an example: docs/MODES.md). An entry
// is taken only for a kAuto method of this process with the same types,
// schema fingerprint and protobuf version; any other is skipped with one
// line on stderr (one of a method not installed here is kept for the next
// save, silently at install).
//
// Thread safety: every function may be called from any thread.
#ifndef ARENARPC_GRPC_AUTO_DECISIONS_H_
#define ARENARPC_GRPC_AUTO_DECISIONS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace arenarpc {

// Writes every kAuto method's decision (methods still learning their first
// are left out), plus the entries of methods not installed here from the
// file read earlier at `path`, to `path`, atomically (a temporary file
// renamed). Errors: the file's (e.g. NotFound for a missing directory).
absl::Status SaveAutoDecisions(const std::string& path);

// Starts every kAuto method installed so far that has not decided yet and
// has a matching entry in `path` in that entry's mode (source kLoaded,
// re-checked recheck_after_s later). Returns how many it started. Errors,
// the file left alone: NotFound, PermissionDenied, InvalidArgument (not
// this format), FailedPrecondition (a newer format version).
absl::StatusOr<int> LoadAutoDecisions(const std::string& path);

}  // namespace arenarpc

#endif  // ARENARPC_GRPC_AUTO_DECISIONS_H_
