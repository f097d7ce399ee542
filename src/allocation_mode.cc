#include "arenarpc/allocation_mode.h"

#include <algorithm>
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

void ModeSamples::Add(AllocationMode mode, double cost) {
  std::vector<double>& s = sorted_[static_cast<int>(mode)];
  s.insert(std::ranges::upper_bound(s, cost), cost);
}

double ModeSamples::Median(AllocationMode mode) const {
  const std::vector<double>& s = sorted_[static_cast<int>(mode)];
  const size_t n = s.size(), mid = n / 2;
  if (n == 0) return -1;
  return n % 2 == 1 ? s[mid] : (s[mid] + s[mid - 1]) / 2;
}

std::optional<AllocationMode> ModeSamples::Cheapest(
    int min_samples, std::optional<AllocationMode> running, double margin,
    std::array<bool, kNumAllocationModes> among) const {
  const int need = std::max(min_samples, 1);
  std::optional<AllocationMode> best;
  for (int i = 0; i < kNumAllocationModes; ++i) {
    const auto m = static_cast<AllocationMode>(i);
    if (among[i] && count(m) >= need && (!best || Median(m) < Median(*best))) {
      best = m;
    }
  }
  const bool keep = best && running &&
                    static_cast<int>(*running) < kNumAllocationModes &&
                    count(*running) >= need &&
                    Median(*running) <= Median(*best) * (1 + margin);
  return keep ? running : best;
}

}  // namespace arenarpc
