// The recommendation rule, "a mode must never lose": arena or reuse only if
// it is cheaper than heap by more than kMargin of heap's parse + destroy
// AND by more than the measured spread (kSigmas standard errors of the
// per-sample paired ratio), arena before reuse unless reuse beats arena the
// same way; otherwise heap. Stricter than kAuto's rule (`auto_choice`),
// which a server can undo by measuring again.
//
//   arenarpc::advise::Verdict v = arenarpc::advise::Recommend(per_sample);
//
// Thread safety: plain functions.
#ifndef ARENARPC_TOOLS_ADVISE_RECOMMEND_H_
#define ARENARPC_TOOLS_ADVISE_RECOMMEND_H_

#include <vector>

#include "arenarpc/allocation_mode.h"
#include "arenarpc/cost_probe.h"

namespace arenarpc::advise {

inline constexpr double kMargin = 0.03;
inline constexpr double kSigmas = 3.0;

// Mode `a` against mode `b` on the same samples: mean of ns_a/ns_b - 1 and
// its standard error (0 with one sample).
struct PairedRatio {
  double mean = 0;
  double se = 0;
  // Cheaper by more than the margin and the spread.
  bool beats() const { return mean < -kMargin && mean + kSigmas * se < 0; }
};
PairedRatio Compare(const std::vector<ModeCosts>& samples, AllocationMode a,
                    AllocationMode b);

struct Verdict {
  AllocationMode mode = AllocationMode::kHeap;
  PairedRatio arena_vs_heap, reuse_vs_heap, reuse_vs_arena;
};
Verdict Recommend(const std::vector<ModeCosts>& samples);

}  // namespace arenarpc::advise

#endif  // ARENARPC_TOOLS_ADVISE_RECOMMEND_H_
