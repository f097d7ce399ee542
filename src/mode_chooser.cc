#include "arenarpc/mode_chooser.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace arenarpc {

ModeChooser::ModeChooser(const ModeChooserOptions& options)
    : options_(options), mode_(options.initial) {
  state_.mode = options.initial;
}

AllocationMode ModeChooser::Observe(const ModeCosts& costs) {
  internal::MutexLock lock(&mu_);
  if (!costs.ok) return state_.mode;
  // Averages: a plain mean until there are 1/alpha samples (so the first
  // does not dominate), then exponential.
  const double w =
      std::max(options_.alpha, 1.0 / static_cast<double>(state_.samples + 1));
  for (int m = 0; m < kNumAllocationModes; ++m) {
    state_.cost_ns[m] += w * (costs.ns[m] - state_.cost_ns[m]);
  }
  ++state_.samples;

  // Each mode against the current one on the same bytes (paired), as a
  // ratio: message sizes vary from sample to sample, ratios much less.
  const int now = static_cast<int>(state_.mode);
  const double wr =
      std::max(options_.alpha, 1.0 / static_cast<double>(since_switch_ + 1));
  ++since_switch_;
  for (int m = 0; m < kNumAllocationModes; ++m) {
    const double r = costs.ns[m] / std::max(costs.ns[now], 1.0) - 1.0;
    ratio_mean_[m] += wr * (r - ratio_mean_[m]);
    ratio_square_[m] += wr * (r * r - ratio_square_[m]);
  }
  if (since_switch_ < options_.min_samples) return state_.mode;

  // The mode that is cheaper by more than the margin, and surely so: its
  // mean ratio is below zero by three standard errors.
  // Variance of the average: of a mean of n, or of an exponential average.
  const double wr_eff =
      wr > options_.alpha ? 1.0 / since_switch_ : wr / (2.0 - wr);
  int best = -1;
  for (int m = 0; m < kNumAllocationModes; ++m) {
    if (m == now) continue;
    const double var =
        std::max(ratio_square_[m] - ratio_mean_[m] * ratio_mean_[m], 0.0);
    const double se = std::sqrt(var * wr_eff);
    if (ratio_mean_[m] < -options_.margin && ratio_mean_[m] + 3 * se < 0 &&
        (best < 0 || ratio_mean_[m] < ratio_mean_[best])) {
      best = m;
    }
  }
  if (best < 0) {
    candidate_ = -1;
    streak_ = 0;
    return state_.mode;
  }
  streak_ = best == candidate_ ? streak_ + 1 : 1;
  candidate_ = best;
  // The first decision needs no streak: nothing was chosen from data yet.
  if (streak_ >= options_.confirmations ||
      (state_.switches == 0 && since_switch_ == options_.min_samples)) {
    state_.mode = static_cast<AllocationMode>(best);
    ++state_.switches;
    mode_.store(state_.mode, std::memory_order_relaxed);
    candidate_ = -1;
    streak_ = 0;
    since_switch_ = 0;
    ratio_mean_.fill(0);
    ratio_square_.fill(0);
  }
  return state_.mode;
}

ModeChooser::Snapshot ModeChooser::snapshot() const {
  internal::MutexLock lock(&mu_);
  return state_;
}

}  // namespace arenarpc
