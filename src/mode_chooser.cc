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

namespace arenarpc {
namespace {

// One-sided Student t quantile at 0.01 %, by degrees of freedom (beyond 30
// the value at 30: slightly conservative).
double TCritical(int df) {
  static constexpr double kT[] = {
      3183.1, 70.70, 22.20, 13.03, 9.678, 8.025, 7.063, 6.442, 6.010, 5.694,
      5.453,  5.263, 5.111, 4.985, 4.880, 4.791, 4.714, 4.648, 4.590, 4.539,
      4.493,  4.452, 4.415, 4.382, 4.352, 4.324, 4.299, 4.275, 4.254, 4.234};
  return kT[std::clamp(df, 1, 30) - 1];
}

}  // namespace

LearningBudget::LearningBudget(double max_cpu_share, double credit_ns)
    : share_(max_cpu_share), credit_ns_(credit_ns) {}

bool LearningBudget::Fits(double process_ns, double expected_ns) const {
  return spent_ns() + expected_ns <= share() * process_ns + credit_ns_;
}

void LearningBudget::Spend(double ns) {
  spent_ns_.fetch_add(static_cast<uint64_t>(std::max(ns, 0.0)),
                      std::memory_order_relaxed);
}

double LearningBudget::spent_ns() const {
  return static_cast<double>(spent_ns_.load(std::memory_order_relaxed));
}

void LearningBudget::LearnSampleCost(double ns) {
  // Quick to rise (an expensive sample must not be followed at once by
  // another), slow to fall.
  expected_ns_ =
      ns > expected_ns_ ? ns : expected_ns_ + 0.25 * (ns - expected_ns_);
}

AutoLearner::AutoLearner(const AutoLearnerOptions& options)
    : options_(options), mode_(options.initial) {
  internal::MutexLock lock(&mu_);
  state_.mode = options.initial;
  StartDecision();
}

void AutoLearner::StartDecision() {
  n_ = 0;
  log_sum_.fill(0);
  calls_.fill(0);
  call_sum_.fill(0);
  call_square_.fill(0);
  looked_at_ = 0;
  for (auto& e : excess_) e.store(0, std::memory_order_relaxed);
  for (auto& n : issued_) n.store(0, std::memory_order_relaxed);
  for (auto& row : pair_sum_) row.fill(0);
  for (auto& row : pair_square_) row.fill(0);
  state_.measured.fill(true);
  state_.settled = false;
  next_check_s_ = -1;
  unsigned mask = (1u << kNumAllocationModes) - 1;
  state_.prior_held_out = PriorHoldsHeap();
  if (state_.prior_held_out) {
    constexpr int kHeap = static_cast<int>(AllocationMode::kHeap);
    state_.measured[kHeap] = false;
    mask &= ~(1u << kHeap);
    // Calls leave heap now: it is not measured, so nothing would move them.
    if (state_.mode == AllocationMode::kHeap) {
      SetMode(static_cast<int>(AllocationMode::kArena));
    }
  }
  mask_.store(mask, std::memory_order_relaxed);
  wants_.store(true, std::memory_order_relaxed);
}

bool AutoLearner::PriorHoldsHeap() const {
  return options_.prior_min_bytes > 0 &&
         (bytes_n_ == 0 ||
          bytes_log_mean_ >= std::log(options_.prior_min_bytes));
}

void AutoLearner::ReleaseHeap() {
  constexpr int kHeap = static_cast<int>(AllocationMode::kHeap);
  state_.measured[kHeap] = true;
  state_.prior_held_out = false;
  ++state_.prior_released;
  mask_.fetch_or(1u << kHeap, std::memory_order_relaxed);
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

bool AutoLearner::Load(AllocationMode mode,
                       const std::array<double, kNumAllocationModes>& cost_ns,
                       double now_s) {
  internal::MutexLock lock(&mu_);
  const int m = static_cast<int>(mode);
  if (m < 0 || m >= kNumAllocationModes || state_.decisions > 0 ||
      state_.source != DecisionSource::kNone) {
    return false;
  }
  StartDecision();  // a clean slate: nothing of a decision under way stays
  SetMode(m);
  state_.cost_ns = cost_ns;
  state_.settled = true;
  state_.source = DecisionSource::kLoaded;
  next_check_s_ = now_s + options_.recheck_after_s;
  mask_.store(1u << m, std::memory_order_relaxed);
  wants_.store(false, std::memory_order_relaxed);
  return true;
}

void AutoLearner::SetMode(int mode) {
  if (mode == static_cast<int>(state_.mode)) return;
  state_.mode = static_cast<AllocationMode>(mode);
  ++state_.switches;
  mode_.store(state_.mode, std::memory_order_relaxed);
}

void AutoLearner::Settle(int mode, double now_s) {
  SetMode(mode);
  state_.settled = true;
  ++state_.decisions;
  state_.source =
      state_.prior_held_out ? DecisionSource::kPrior : DecisionSource::kLearned;
  if (state_.prior_held_out) ++state_.prior_decisions;
  if (state_.first_decision_s < 0) {
    state_.first_decision_s = now_s;
    state_.first_decision_samples = state_.samples;
  }
  next_check_s_ = now_s + options_.recheck_after_s;
  wants_.store(false, std::memory_order_relaxed);
}

bool AutoLearner::Wants(double now_s) {
  internal::MutexLock lock(&mu_);
  if (state_.settled && now_s >= next_check_s_) StartDecision();
  return !state_.settled;
}

double AutoLearner::next_check_s() const {
  internal::MutexLock lock(&mu_);
  return next_check_s_;
}

AutoLearner::Snapshot AutoLearner::snapshot() const {
  internal::MutexLock lock(&mu_);
  return state_;
}

double AutoLearner::Mean(int i, int j) const { return pair_sum_[i][j] / n_; }

double AutoLearner::StandardError(int i, int j) const {
  const double mu = Mean(i, j);
  const double var =
      std::max(pair_square_[i][j] - n_ * mu * mu, 0.0) / (n_ - 1);
  return std::sqrt(var / n_);
}

AllocationMode AutoLearner::Observe(const ModeCosts& costs, double now_s) {
  internal::MutexLock lock(&mu_);
  if (!costs.ok || state_.settled) return state_.mode;
  // The prior is for real calls (it sizes them): paired samples time every
  // mode, heap from the next sample on (this one did not time it).
  if (state_.prior_held_out) {
    ReleaseHeap();
    ++state_.samples;  // taken, not folded in
    return state_.mode;
  }
  constexpr int kModes = kNumAllocationModes;
  const auto& alive = state_.measured;
  std::array<double, kModes> x = {};
  for (int m = 0; m < kModes; ++m) {
    if (alive[m]) x[m] = std::log(std::max(costs.ns[m], 1.0));
  }
  ++n_;
  ++state_.samples;
  for (int i = 0; i < kModes; ++i) {
    if (!alive[i]) continue;
    log_sum_[i] += x[i];
    state_.cost_ns[i] = std::exp(log_sum_[i] / n_);  // geometric mean
    for (int j = 0; j < kModes; ++j) {
      if (!alive[j] || j == i) continue;
      const double d = x[i] - x[j];
      pair_sum_[i][j] += d;
      pair_square_[i][j] += d * d;
    }
  }
  // Per mode, its level (mean log cost); per pair of measured modes, the
  // mean log ratio and its t bound.
  std::array<double, kModes> level = {};
  for (int i = 0; i < kModes; ++i) level[i] = log_sum_[i] / n_;
  Lead(level);
  if (n_ < options_.min_samples) return state_.mode;
  const double t = TCritical(n_ - 1);
  Pairs diff = {};
  Pairs bound = {};
  for (int i = 0; i < kModes; ++i) {
    for (int j = 0; j < kModes; ++j) {
      if (j == i || !alive[i] || !alive[j]) continue;
      diff[i][j] = Mean(i, j);
      bound[i][j] = t * StandardError(i, j);
    }
  }
  Decide(level, diff, bound, n_ >= options_.max_samples, now_s);
  return state_.mode;
}

void AutoLearner::Lead(const std::array<double, kNumAllocationModes>& level) {
  // While learning, calls run in the mode that looks much cheaper so far:
  // on widely different modes (a batch that reuse keeps whole) the first
  // sample already says where calls are cheaper, long before the test can.
  const auto& alive = state_.measured;
  const int now = static_cast<int>(state_.mode);
  int lead = now;
  for (int i = 0; i < kNumAllocationModes; ++i) {
    if (alive[i] && level[i] < level[lead]) lead = i;
  }
  if (alive[now] && level[now] - level[lead] > std::log1p(options_.lead)) {
    SetMode(lead);
  }
}

void AutoLearner::Decide(const std::array<double, kNumAllocationModes>& level,
                         const Pairs& diff, const Pairs& bound, bool last,
                         double now_s) {
  constexpr int kModes = kNumAllocationModes;
  const auto& alive = state_.measured;
  // Drop every mode surely more expensive than another measured one.
  std::array<bool, kModes> drop = {};
  for (int i = 0; i < kModes; ++i) {
    for (int j = 0; j < kModes && alive[i]; ++j) {
      if (j != i && alive[j] && diff[i][j] - bound[i][j] > 0) drop[i] = true;
    }
  }
  unsigned mask = 0;
  for (int i = 0; i < kModes; ++i) {
    if (drop[i]) {
      state_.measured[i] = false;
      ++state_.dropped_modes;
    }
    if (state_.measured[i]) mask |= 1u << i;
  }
  mask_.store(mask, std::memory_order_relaxed);

  // The cheapest measured mode, and whether all measured modes surely tie.
  const double tie = std::log1p(options_.margin);
  int cheapest = -1;
  int left = 0;
  bool all_tie = true;
  for (int i = 0; i < kModes; ++i) {
    if (!alive[i]) continue;
    ++left;
    if (cheapest < 0 || level[i] < level[cheapest]) cheapest = i;
    for (int j = i + 1; j < kModes; ++j) {
      if (alive[j] && std::abs(diff[i][j]) + bound[i][j] >= tie) {
        all_tie = false;
      }
    }
  }
  const int now = static_cast<int>(state_.mode);
  // A tie within the margin keeps the mode calls run in (no flapping).
  const int pick =
      alive[now] && level[now] - level[cheapest] < tie ? now : cheapest;
  if (left == 1 || all_tie || last) {
    Settle(pick, now_s);
  } else if (!alive[now]) {
    SetMode(cheapest);  // the mode calls run in lost: leave it now
  }
}

AllocationMode AutoLearner::NextTrialMode() {
  // The measured mode with the fewest calls (the one the next look waits
  // for; a dear mode is not starved by cheaper ones taking the budget),
  // ties in turn after the mode tried last.
  const unsigned mask = measured_mask();
  const int last = last_trial_.load(std::memory_order_relaxed);
  int pick = -1;
  int fewest = 0;
  for (int k = 1; k <= kNumAllocationModes; ++k) {
    const int i = (last + k + kNumAllocationModes) % kNumAllocationModes;
    if ((mask & (1u << i)) == 0) continue;
    const int n = issued_[i].load(std::memory_order_relaxed);
    if (pick < 0 || n < fewest) {
      pick = i;
      fewest = n;
    }
  }
  if (pick < 0) return current();
  last_trial_.store(pick, std::memory_order_relaxed);
  issued_[pick].fetch_add(1, std::memory_order_relaxed);
  return static_cast<AllocationMode>(pick);
}

void AutoLearner::CancelTrial(AllocationMode mode) {
  // Never below 0: a decision may have restarted since it was handed out.
  std::atomic<int>& n = issued_[static_cast<int>(mode)];
  int v = n.load(std::memory_order_relaxed);
  while (v > 0 &&
         !n.compare_exchange_weak(v, v - 1, std::memory_order_relaxed)) {
  }
}

std::optional<AllocationMode> AutoLearner::CloseRival(double within) const {
  internal::MutexLock lock(&mu_);
  const int pick = static_cast<int>(state_.mode);
  if (!state_.settled || calls_[pick] < options_.min_samples) {
    return std::nullopt;
  }
  const double own = call_sum_[pick] / calls_[pick];
  int rival = -1;
  for (int i = 0; i < kNumAllocationModes; ++i) {
    if (i == pick || calls_[i] < options_.min_samples) continue;
    if (rival < 0 ||
        call_sum_[i] / calls_[i] < call_sum_[rival] / calls_[rival]) {
      rival = i;
    }
  }
  if (rival < 0 ||
      std::abs(call_sum_[rival] / calls_[rival] - own) >= std::log1p(within)) {
    return std::nullopt;
  }
  return static_cast<AllocationMode>(rival);
}

void AutoLearner::Confirm(AllocationMode mode) {
  internal::MutexLock lock(&mu_);
  if (state_.settled) SetMode(static_cast<int>(mode));
}

void AutoLearner::RestartDecision() {
  internal::MutexLock lock(&mu_);
  if (!state_.settled) StartDecision();
}

AllocationMode AutoLearner::ObserveCall(AllocationMode mode, double cost_ns,
                                        double bytes, double now_s) {
  internal::MutexLock lock(&mu_);
  const int m = static_cast<int>(mode);
  if (state_.settled || !state_.measured[m]) return state_.mode;
  constexpr int kModes = kNumAllocationModes;
  const auto& alive = state_.measured;
  // The method's size, for the prior: a small method measures heap too.
  ++bytes_n_;
  bytes_log_mean_ += std::max(1.0 / static_cast<double>(bytes_n_), 1.0 / 64) *
                     (std::log(std::max(bytes, 1.0)) - bytes_log_mean_);
  if (state_.prior_held_out && !PriorHoldsHeap()) ReleaseHeap();
  const double y = std::log(std::max(cost_ns, 1.0) / std::max(bytes, 1.0));
  ++calls_[m];
  ++state_.samples;
  call_sum_[m] += y;
  call_square_[m] += y * y;
  log_sum_[m] += std::log(std::max(cost_ns, 1.0));
  state_.cost_ns[m] = std::exp(log_sum_[m] / calls_[m]);  // geometric mean
  // Levels: mean log cost per byte (unknown: +inf, never the cheapest).
  std::array<double, kModes> level;
  level.fill(std::numeric_limits<double>::infinity());
  int fewest = std::numeric_limits<int>::max();
  double best = std::numeric_limits<double>::infinity();
  for (int i = 0; i < kModes; ++i) {
    if (!alive[i]) continue;
    fewest = std::min(fewest, calls_[i]);
    if (calls_[i] > 0) level[i] = call_sum_[i] / calls_[i];
    best = std::min(best, level[i]);
  }
  for (int i = 0; i < kModes; ++i) {
    // Dropped modes too (a call still in flight in one is billed).
    const double own = calls_[i] > 0 ? call_sum_[i] / calls_[i] : best;
    excess_[i].store(std::max(0.0, 1 - std::exp(best - own)),
                     std::memory_order_relaxed);
  }
  // The lead rule, between modes of min_samples calls or more: a call is
  // one unpaired sample, as noisy as a call (on callback HoraeDB, arena and
  // reuse within 5 %, a lead "seen" on the first calls moved the calls to
  // reuse, after which every arena trial found its pages given back and the
  // method did not settle within 18 s in 10 of 10 such rounds).
  std::array<double, kModes> lead_level = level;
  for (int i = 0; i < kModes; ++i) {
    if (calls_[i] < options_.min_samples) {
      lead_level[i] = std::numeric_limits<double>::infinity();
    }
  }
  if (std::isfinite(lead_level[static_cast<int>(state_.mode)])) {
    Lead(lead_level);
  }
  // Looks: only when the fewest calls of a measured mode grows.
  if (fewest < options_.min_samples || fewest <= looked_at_) {
    return state_.mode;
  }
  // The prior's evidence: calls this cheap per byte are not made of many
  // small objects (bulk bytes, a few strings), where heap may be as cheap
  // as the others: heap is measured from here on (its calls start at 0, so
  // no look until it has min_samples).
  if (state_.prior_held_out &&
      best < std::log(options_.prior_heap_ns_per_byte)) {
    ReleaseHeap();
    return state_.mode;
  }
  looked_at_ = fewest;
  // One variance for all measured modes (pooled: noise is multiplicative
  // and alike across modes), so the degrees of freedom add up.
  double squares = 0;
  int df = 0;
  for (int i = 0; i < kModes; ++i) {
    if (!alive[i]) continue;
    squares += std::max(call_square_[i] - calls_[i] * level[i] * level[i], 0.0);
    df += calls_[i] - 1;
  }
  const double var = squares / df;
  const double t = TCritical(df);
  Pairs diff = {};
  Pairs bound = {};
  for (int i = 0; i < kModes; ++i) {
    for (int j = 0; j < kModes; ++j) {
      if (j == i || !alive[i] || !alive[j]) continue;
      diff[i][j] = level[i] - level[j];
      bound[i][j] = t * std::sqrt(var * (1.0 / calls_[i] + 1.0 / calls_[j]));
    }
  }
  Decide(level, diff, bound, fewest >= options_.max_calls_per_mode, now_s);
  return state_.mode;
}

}  // namespace arenarpc
