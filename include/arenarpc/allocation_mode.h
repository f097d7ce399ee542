// What a message is made of: heap objects, a pooled arena, a reused pooled
// instance, or `auto` (measured per message type on live traffic).
//
//   absl::StatusOr<arenarpc::AllocationMode> m =
//       arenarpc::ParseAllocationMode("auto");
//   std::string_view name = arenarpc::AllocationModeName(*m);   // "auto"
#ifndef ARENARPC_ALLOCATION_MODE_H_
#define ARENARPC_ALLOCATION_MODE_H_

#include <array>
#include <optional>
#include <string_view>
#include <vector>

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

// kAuto's rule, also shadow measurement's and arenarpc_advise's: among the
// modes with enough measured costs (any unit; kAuto's: CPU per wire byte),
// the lowest median wins (one page fault must not decide); the running
// mode stays while within a margin of it.
//
//   arenarpc::ModeSamples s;
//   s.Add(arenarpc::AllocationMode::kHeap, heap_ns);  // per measurement
//   std::optional<arenarpc::AllocationMode> m = s.Cheapest(
//       arenarpc::ModeSamples::kPerMode, running,
//       arenarpc::ModeSamples::kMargin);
//
// Thread safety: a plain value; one thread at a time.
class ModeSamples {
 public:
  static constexpr int kPerMode = 24;      // kAuto's timed calls per mode
  static constexpr double kMargin = 0.03;  // within it the running mode stays

  void Add(AllocationMode mode, double cost);
  int count(AllocationMode mode) const {
    return static_cast<int>(sorted_[static_cast<int>(mode)].size());
  }
  double Median(AllocationMode mode) const;  // -1: no samples
  // The mode of lowest median (the first on a tie) of those in `among` with
  // `min_samples` (at least 1) or more, but `running` while it has as many
  // and a median within `margin` of that one's; none while none has enough.
  std::optional<AllocationMode> Cheapest(
      int min_samples, std::optional<AllocationMode> running = {},
      double margin = 0,
      std::array<bool, kNumAllocationModes> among = {true, true, true}) const;

 private:
  std::array<std::vector<double>, kNumAllocationModes> sorted_;  // ascending
};

}  // namespace arenarpc

#endif  // ARENARPC_ALLOCATION_MODE_H_
