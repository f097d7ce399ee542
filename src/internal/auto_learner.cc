#include "src/internal/auto_learner.h"

#include <algorithm>
#include <cmath>

namespace arenarpc::internal {

constexpr int kHeap = static_cast<int>(AllocationMode::kHeap);

double AutoLearner::ModeCalls::median() const {
  const size_t n = sorted.size(), mid = n / 2;
  if (n == 0) return -1;
  return n % 2 == 1 ? sorted[mid] : (sorted[mid] + sorted[mid - 1]) / 2;
}

AutoLearner::AutoLearner(const LearnerOptions& options) : options_(options) {
  MutexLock lock(&mu_);
  StartDecision();
}

void AutoLearner::StartDecision() {
  for (ModeCalls& m : calls_) m = {.candidate = true};
  calls_[kHeap].candidate = options_.prior_min_bytes <= 0;
  log_bytes_sum_ = 0;
  warming_ = 0;
  started_in_ = current();
  recheck_at_s_.store(-1, std::memory_order_relaxed);
  learning_.store(true, std::memory_order_relaxed);
}

bool AutoLearner::HeapHeldOut() const {
  return !calls_[kHeap].candidate && calls_[kHeap].sorted.empty();
}

// Geometric: a few large calls do not hide many small ones.
double AutoLearner::MeanBytes() const {
  size_t n = 0;
  for (const ModeCalls& c : calls_) n += c.sorted.size();
  return std::exp(log_bytes_sum_ / static_cast<double>(n));
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
    if (calls_[m].candidate && calls_[m].n() < options_.calls_per_mode) {
      return static_cast<AllocationMode>(m);
    }
  }
  return std::nullopt;  // every trial handed out; waiting for them to end
}

// Every candidate has its calls, or one is left with `min_calls`: more calls
// of the last candidate cannot change the decision, only cost their bill.
bool AutoLearner::Finished() const {
  int left = 0;
  int fewest = options_.calls_per_mode;
  for (const ModeCalls& c : calls_) {
    if (c.candidate) ++left, fewest = std::min(fewest, c.n());
  }
  const int needed = left == 1 ? options_.min_calls : options_.calls_per_mode;
  return left > 0 && fewest >= needed;
}

int AutoLearner::Cheapest(int min_calls) const {
  int best = -1;
  for (int m = 0; m < kNumAllocationModes; ++m) {
    const ModeCalls& c = calls_[m];
    if (c.candidate && c.n() >= min_calls &&
        (best < 0 || c.median() < calls_[best].median())) {
      best = m;
    }
  }
  return best;
}

bool AutoLearner::Observe(AllocationMode mode, double cost_ns, double bytes,
                          bool warming, double now_s) {
  const int mi = static_cast<int>(mode);
  if (mi < 0 || mi >= kNumAllocationModes) return false;
  MutexLock lock(&mu_);
  // A trial handed out before the decision settled or dropped its mode.
  if (!learning() || !calls_[mi].candidate) return false;
  if (warming && warming_ < options_.max_warming) {
    ++warming_;
    ++stats_.warming;
    return false;
  }
  bytes = std::max(bytes, 1.0);
  const double per_byte = cost_ns / bytes;
  std::vector<double>& sorted = calls_[mi].sorted;
  sorted.insert(std::ranges::upper_bound(sorted, per_byte), per_byte);
  log_bytes_sum_ += std::log(bytes);
  ++stats_.observed;
  if (first_s_ < 0) first_s_ = now_s;
  if (HeapHeldOut() && MeanBytes() < options_.prior_min_bytes) {
    calls_[kHeap].candidate = true;  // the calls are small: heap may win
  }
  // Clear losers stop here, and calls stop running in one.
  double best = -1;
  int best_mode = -1;
  for (int m = 0; m < kNumAllocationModes; ++m) {
    const double med = calls_[m].median();
    if (calls_[m].n() >= options_.min_calls && (best < 0 || med < best)) {
      best = med, best_mode = m;
    }
  }
  for (int m = 0; m < kNumAllocationModes; ++m) {
    if (calls_[m].candidate && calls_[m].n() >= options_.min_calls &&
        calls_[m].median() > options_.drop_ratio * best) {
      calls_[m].candidate = false;
      if (static_cast<AllocationMode>(m) == current()) SetCurrent(best_mode);
    }
  }
  if (!Finished()) return false;
  if (HeapHeldOut() && best < options_.prior_heap_ns_per_byte) {
    calls_[kHeap].candidate = true;  // bulk bytes: heap may be as cheap
    return false;
  }
  Settle(now_s);
  return true;
}

void AutoLearner::Settle(double now_s) {
  const int before = static_cast<int>(current());
  const int best = Cheapest(0);
  const double kept = calls_[before].median();
  const bool keep =
      kept >= 0 && kept <= calls_[best].median() * (1 + options_.margin);
  const int chosen = keep ? before : best;
  const double mean_bytes = MeanBytes();
  for (int m = 0; m < kNumAllocationModes; ++m) {
    stats_.cost_ns[m] = std::max(calls_[m].median(), 0.0) * mean_bytes;
  }
  const bool prior = HeapHeldOut();
  stats_.source = prior ? DecisionSource::kPrior : DecisionSource::kLearned;
  if (prior) ++stats_.prior_decisions;
  if (chosen != static_cast<int>(started_in_)) ++stats_.switches;
  if (stats_.decisions++ == 0) {
    stats_.first_decision_calls = stats_.observed;
    stats_.first_decision_s = now_s - first_s_;
  }
  SetCurrent(chosen);
  SettledUntil(now_s + options_.recheck_after_s);
}

double AutoLearner::ExcessShare(AllocationMode mode) const {
  MutexLock lock(&mu_);
  const double own = calls_[static_cast<int>(mode)].median();
  if (own <= 0) return 0;
  // Against the mode untimed calls run in, once measured: a trial in a mode
  // no dearer than that one costs nothing a call would not have cost.
  double ref = calls_[static_cast<int>(current())].median();
  if (ref < 0) {
    ref = own;
    for (const ModeCalls& c : calls_) {
      if (c.median() >= 0) ref = std::min(ref, c.median());
    }
  }
  return std::max(0.0, 1 - ref / own);
}

void AutoLearner::Load(AllocationMode mode, double now_s,
                       const std::array<double, kNumAllocationModes>& cost_ns) {
  MutexLock lock(&mu_);
  SetCurrent(static_cast<int>(mode));
  stats_.source = DecisionSource::kLoaded;
  stats_.cost_ns = cost_ns;
  SettledUntil(now_s + options_.recheck_after_s);
}

void AutoLearner::Pause(double now_s) {
  MutexLock lock(&mu_);
  const int best = Cheapest(options_.min_calls);
  if (best >= 0) SetCurrent(best);
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
