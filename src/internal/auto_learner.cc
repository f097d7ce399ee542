#include "src/internal/auto_learner.h"

#include <algorithm>
#include <cmath>

namespace arenarpc::internal {

namespace {
constexpr int kHeap = static_cast<int>(AllocationMode::kHeap);
constexpr AllocationMode Mode(int m) { return static_cast<AllocationMode>(m); }
}  // namespace

AutoLearner::AutoLearner(const LearnerOptions& options) : options_(options) {
  MutexLock lock(&mu_);
  StartDecision();
}

void AutoLearner::StartDecision() {
  calls_ = {};
  candidate_ = {true, true, true};
  candidate_[kHeap] = options_.prior_min_bytes <= 0;
  log_bytes_sum_ = 0;
  warming_ = 0;
  started_in_ = current();
  recheck_at_s_.store(-1, std::memory_order_relaxed);
  learning_.store(true, std::memory_order_relaxed);
}

bool AutoLearner::HeapHeldOut() const {
  return !candidate_[kHeap] && calls_.count(Mode(kHeap)) == 0;
}

// Geometric: a few large calls do not hide many small ones.
double AutoLearner::MeanBytes() const {
  int n = 0;
  for (int m = 0; m < kNumAllocationModes; ++m) n += calls_.count(Mode(m));
  return std::exp(log_bytes_sum_ / n);
}

std::optional<AllocationMode> AutoLearner::Trial(double now_s) {
  auto due = [&] {
    const double at = recheck_at_s_.load(std::memory_order_relaxed);
    return at >= 0 && now_s >= at;
  };
  if (!learning() && !due()) return std::nullopt;
  MutexLock lock(&mu_);
  if (!learning() && !due()) return std::nullopt;
  if (!learning()) StartDecision();  // a re-check is due
  // The candidates in turn, skipping those with their calls already.
  for (int i = 0; i < kNumAllocationModes; ++i) {
    const int m = static_cast<int>(turn_++ % kNumAllocationModes);
    if (candidate_[m] && calls_.count(Mode(m)) < options_.calls_per_mode) {
      return Mode(m);
    }
  }
  return std::nullopt;  // every trial handed out; waiting for them to end
}

// Every candidate has its calls, or one is left with `min_calls`: more calls
// of the last candidate cannot change the decision, only cost their bill.
bool AutoLearner::Finished() const {
  int left = 0;
  int fewest = options_.calls_per_mode;
  for (int m = 0; m < kNumAllocationModes; ++m) {
    if (candidate_[m]) ++left, fewest = std::min(fewest, calls_.count(Mode(m)));
  }
  const int needed = left == 1 ? options_.min_calls : options_.calls_per_mode;
  return left > 0 && fewest >= needed;
}

bool AutoLearner::Observe(AllocationMode mode, double cost_ns, double bytes,
                          bool warming, double now_s) {
  const int mi = static_cast<int>(mode);
  if (mi < 0 || mi >= kNumAllocationModes) return false;
  MutexLock lock(&mu_);
  // A trial handed out before the decision settled or dropped its mode.
  if (!learning() || !candidate_[mi]) return false;
  if (warming && warming_ < options_.max_warming) {
    ++warming_;
    ++stats_.warming;
    return false;
  }
  bytes = std::max(bytes, 1.0);
  calls_.Add(mode, cost_ns / bytes);
  log_bytes_sum_ += std::log(bytes);
  ++stats_.observed;
  if (first_s_ < 0) first_s_ = now_s;
  if (HeapHeldOut() && MeanBytes() < options_.prior_min_bytes) {
    candidate_[kHeap] = true;  // the calls are small: heap may win
  }
  // Clear losers stop here, and calls stop running in one.
  const std::optional<AllocationMode> best_mode =
      calls_.Cheapest(options_.min_calls);
  const double best = best_mode ? calls_.Median(*best_mode) : -1;
  for (int m = 0; m < kNumAllocationModes; ++m) {
    if (candidate_[m] && calls_.count(Mode(m)) >= options_.min_calls &&
        calls_.Median(Mode(m)) > options_.drop_ratio * best) {
      candidate_[m] = false;
      if (Mode(m) == current()) SetCurrent(*best_mode);
    }
  }
  if (!Finished()) return false;
  if (HeapHeldOut() && best < options_.prior_heap_ns_per_byte) {
    candidate_[kHeap] = true;  // bulk bytes: heap may be as cheap
    return false;
  }
  Settle(now_s);
  return true;
}

void AutoLearner::Settle(double now_s) {
  const AllocationMode chosen =
      calls_.Cheapest(1, current(), options_.margin, candidate_)
          .value_or(current());
  const double mean_bytes = MeanBytes();
  for (int m = 0; m < kNumAllocationModes; ++m) {
    stats_.cost_ns[m] = std::max(calls_.Median(Mode(m)), 0.0) * mean_bytes;
  }
  const bool prior = HeapHeldOut();
  stats_.source = prior ? DecisionSource::kPrior : DecisionSource::kLearned;
  if (prior) ++stats_.prior_decisions;
  if (chosen != started_in_) ++stats_.switches;
  if (stats_.decisions++ == 0) {
    stats_.first_decision_calls = stats_.observed;
    stats_.first_decision_s = now_s - first_s_;
  }
  SetCurrent(chosen);
  SettledUntil(now_s + options_.recheck_after_s);
}

double AutoLearner::ExcessShare(AllocationMode mode) const {
  MutexLock lock(&mu_);
  const double own = calls_.Median(mode);
  if (own <= 0) return 0;
  // Against the mode untimed calls run in, once measured: a trial in a mode
  // no dearer than that one costs nothing a call would not have cost.
  double ref = calls_.Median(current());
  if (ref < 0) ref = calls_.Median(*calls_.Cheapest(1));
  return std::max(0.0, 1 - ref / own);
}

bool AutoLearner::Ran(AllocationMode mode) const {
  MutexLock lock(&mu_);
  return calls_.count(mode) > 0 || started_in_ == mode;
}

void AutoLearner::Load(AllocationMode mode, double now_s,
                       const std::array<double, kNumAllocationModes>& cost_ns) {
  MutexLock lock(&mu_);
  SetCurrent(mode);
  stats_.source = DecisionSource::kLoaded;
  stats_.cost_ns = cost_ns;
  SettledUntil(now_s + options_.recheck_after_s);
}

void AutoLearner::Pause(double now_s) {
  MutexLock lock(&mu_);
  const std::optional<AllocationMode> best =
      calls_.Cheapest(options_.min_calls, {}, 0, candidate_);
  if (best) SetCurrent(*best);
  SettledUntil(now_s + options_.recheck_after_s);
}

AutoLearner::Snapshot AutoLearner::snapshot() const {
  MutexLock lock(&mu_);
  Snapshot s = stats_;
  s.mode = current();
  s.learning = learning();
  return s;
}

}  // namespace arenarpc::internal
