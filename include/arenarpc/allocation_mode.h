// What a message is made of: heap objects, a pooled arena, a reused pooled
// instance, or `auto` (measured per message type on live traffic).
//
//   absl::StatusOr<arenarpc::AllocationMode> m =
//       arenarpc::ParseAllocationMode("auto");
//   std::string_view name = arenarpc::AllocationModeName(*m);   // "auto"
#ifndef ARENARPC_ALLOCATION_MODE_H_
#define ARENARPC_ALLOCATION_MODE_H_

#include <string_view>

#include "absl/status/statusor.h"

namespace arenarpc {

// kAuto picks one of the others per message type (and may change it).
enum class AllocationMode { kHeap = 0, kArena = 1, kReuse = 2, kAuto = 3 };
// The modes a message can live in (arrays indexed by mode have this size).
inline constexpr int kNumAllocationModes = 3;

// "heap", "arena", "reuse" or "auto"; InvalidArgument otherwise.
absl::StatusOr<AllocationMode> ParseAllocationMode(std::string_view name);
std::string_view AllocationModeName(AllocationMode mode);

// Where kAuto's decision came from: every mode measured, heap held out by
// the size prior, or a decisions file; kNone before the first.
enum class DecisionSource { kNone = 0, kLearned, kPrior, kLoaded };
// "none", "learned", "prior", "loaded".
const char* DecisionSourceName(DecisionSource source);

}  // namespace arenarpc

#endif  // ARENARPC_ALLOCATION_MODE_H_
