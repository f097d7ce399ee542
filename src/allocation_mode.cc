#include "arenarpc/allocation_mode.h"

#include <iterator>
#include <string>

namespace arenarpc {
namespace {
// In enum order.
constexpr std::string_view kModeNames[] = {"heap", "arena", "reuse", "auto"};
constexpr const char* kSourceNames[] = {"none", "learned", "prior", "loaded"};
}  // namespace

absl::StatusOr<AllocationMode> ParseAllocationMode(std::string_view name) {
  for (size_t i = 0; i < std::size(kModeNames); ++i) {
    if (name == kModeNames[i]) return static_cast<AllocationMode>(i);
  }
  return absl::InvalidArgumentError("unknown allocation mode \"" +
                                    std::string(name) +
                                    "\" (heap, arena, reuse or auto)");
}

std::string_view AllocationModeName(AllocationMode mode) {
  const auto i = static_cast<unsigned>(mode);
  return i < std::size(kModeNames) ? kModeNames[i] : "unknown";
}

const char* DecisionSourceName(DecisionSource source) {
  const auto i = static_cast<unsigned>(source);
  return i < std::size(kSourceNames) ? kSourceNames[i] : "none";
}

}  // namespace arenarpc
