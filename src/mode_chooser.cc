#include "arenarpc/mode_chooser.h"

#include <algorithm>
#include <cmath>

namespace arenarpc {

AllocationMode ModeChooser::Observe(const ModeCosts& costs) {
  internal::MutexLock lock(&mu_);
  if (!costs.ok) return state_.mode;
  // The weight of the n-th sample: a plain mean until there are 1/alpha
  // samples (so the first does not dominate), then exponential.
  const auto weight = [&](double n) { return std::max(options_.alpha, 1 / n); };
  const double w = weight(static_cast<double>(++state_.samples));
  for (int m = 0; m < kNumAllocationModes; ++m)
    state_.cost_ns[m] += w * (costs.ns[m] - state_.cost_ns[m]);

  // Each mode against the current one on the same bytes (paired), as a
  // ratio: message sizes vary from sample to sample, ratios much less.
  const int now = static_cast<int>(state_.mode);
  const double wr = weight(++run_.samples);
  for (int m = 0; m < kNumAllocationModes; ++m) {
    const double r = costs.ns[m] / std::max(costs.ns[now], 1.0) - 1.0;
    run_.mean[m] += wr * (r - run_.mean[m]);
    run_.square[m] += wr * (r * r - run_.square[m]);
  }
  if (run_.samples < options_.min_samples) return state_.mode;

  // The cheapest mode cheaper by more than the margin, and surely so: by
  // three standard errors (of a mean of n, or of an exponential average).
  const double se_weight =
      wr > options_.alpha ? 1.0 / run_.samples : wr / (2.0 - wr);
  int best = -1;
  for (int m = 0; m < kNumAllocationModes; ++m) {
    const double mean = run_.mean[m];
    const double se =
        std::sqrt(std::max(run_.square[m] - mean * mean, 0.0) * se_weight);
    if (m != now && mean < -options_.margin && mean + 3 * se < 0 &&
        (best < 0 || mean < run_.mean[best])) {
      best = m;
    }
  }
  run_.streak = best < 0 ? 0 : best == run_.candidate ? run_.streak + 1 : 1;
  run_.candidate = best;
  // The first move needs no streak: nothing was chosen from data yet.
  if (best >= 0 &&
      (run_.streak >= options_.confirmations ||
       (state_.switches == 0 && run_.samples == options_.min_samples))) {
    state_.mode = static_cast<AllocationMode>(best);
    ++state_.switches;
    mode_.store(state_.mode, std::memory_order_relaxed);
    run_ = {};
  }
  return state_.mode;
}

}  // namespace arenarpc
