#include "arenarpc/allocation_mode.h"

#include <string>

namespace arenarpc {

absl::StatusOr<AllocationMode> ParseAllocationMode(std::string_view name) {
  if (name == "heap") return AllocationMode::kHeap;
  if (name == "arena") return AllocationMode::kArena;
  if (name == "reuse") return AllocationMode::kReuse;
  if (name == "auto") return AllocationMode::kAuto;
  return absl::InvalidArgumentError("unknown allocation mode \"" +
                                    std::string(name) +
                                    "\" (heap, arena, reuse or auto)");
}

std::string_view AllocationModeName(AllocationMode mode) {
  switch (mode) {
    case AllocationMode::kHeap:
      return "heap";
    case AllocationMode::kArena:
      return "arena";
    case AllocationMode::kReuse:
      return "reuse";
    case AllocationMode::kAuto:
      return "auto";
  }
  return "unknown";
}

const char* DecisionSourceName(DecisionSource source) {
  switch (source) {
    case DecisionSource::kLearned:
      return "learned";
    case DecisionSource::kPrior:
      return "prior";
    case DecisionSource::kLoaded:
      return "loaded";
    case DecisionSource::kNone:
      break;
  }
  return "none";
}

}  // namespace arenarpc
