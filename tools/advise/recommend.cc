#include "recommend.h"

#include <algorithm>
#include <cmath>

namespace arenarpc::advise {

PairedRatio Compare(const std::vector<ModeCosts>& samples, AllocationMode a,
                    AllocationMode b) {
  // Ratios, not differences: sizes vary from sample to sample, ratios less.
  double sum = 0, square = 0;
  int n = 0;
  for (const ModeCosts& c : samples) {
    if (!c.ok) continue;
    const double r =
        c.ns[static_cast<int>(a)] / std::max(c.ns[static_cast<int>(b)], 1.0) -
        1.0;
    sum += r;
    square += r * r;
    ++n;
  }
  PairedRatio p;
  if (n == 0) return p;
  p.mean = sum / n;
  if (n > 1) {
    const double var = std::max(square - n * p.mean * p.mean, 0.0) / (n - 1);
    p.se = std::sqrt(var / n);
  }
  return p;
}

Verdict Recommend(const std::vector<ModeCosts>& samples) {
  Verdict v;
  v.arena_vs_heap =
      Compare(samples, AllocationMode::kArena, AllocationMode::kHeap);
  v.reuse_vs_heap =
      Compare(samples, AllocationMode::kReuse, AllocationMode::kHeap);
  v.reuse_vs_arena =
      Compare(samples, AllocationMode::kReuse, AllocationMode::kArena);
  const bool arena = v.arena_vs_heap.beats();
  const bool reuse = v.reuse_vs_heap.beats();
  if (reuse && (!arena || v.reuse_vs_arena.beats())) {
    v.mode = AllocationMode::kReuse;
  } else if (arena) {
    v.mode = AllocationMode::kArena;
  }
  return v;
}

}  // namespace arenarpc::advise
