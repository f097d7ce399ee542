#include "src/internal/mode_confirmation.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace arenarpc::internal {
namespace {

// One-sided Student t quantile at 5 %, by degrees of freedom (beyond 30
// the value at 30: slightly conservative).
double TCritical5(int df) {
  static constexpr double kT[] = {
      6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812,
      1.796, 1.782, 1.771, 1.761, 1.753, 1.746, 1.740, 1.734, 1.729, 1.725,
      1.721, 1.717, 1.714, 1.711, 1.708, 1.706, 1.703, 1.701, 1.699, 1.697};
  return kT[std::clamp(df, 1, 30) - 1];
}

}  // namespace

bool ConfirmationSlot::TryAcquire(const void* owner) {
  const void* expected = nullptr;
  return owner_.compare_exchange_strong(expected, owner,
                                        std::memory_order_acq_rel) ||
         expected == owner;
}

void ConfirmationSlot::Release(const void* owner) {
  const void* expected = owner;
  owner_.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
}

ModeConfirmation::ModeConfirmation(const ModeConfirmationOptions& options,
                                   ConfirmationSlot* slot)
    : options_{std::max(options.pairs, 2), std::max(options.epoch_calls, 1),
               std::max(options.epoch_s, 0.0),
               std::max(options.max_epoch_s, options.epoch_s)},
      slot_(slot) {}

void ModeConfirmation::Request(AllocationMode pick, AllocationMode rival) {
  MutexLock lock(&mu_);
  if (state_ == State::kPaused || state_ == State::kRunning) return;
  if (pick == rival) return;
  pick_ = pick;
  rival_ = rival;
  state_ = State::kWaiting;
  ++stats_.requested;
  engaged_.store(true, std::memory_order_relaxed);
}

bool ModeConfirmation::Cancel() {
  MutexLock lock(&mu_);
  if (state_ != State::kWaiting) return false;
  ToIdle();
  return true;
}

bool ModeConfirmation::running() const {
  MutexLock lock(&mu_);
  return state_ == State::kPaused || state_ == State::kRunning;
}

ModeConfirmation::Stats ModeConfirmation::stats() const {
  MutexLock lock(&mu_);
  return stats_;
}

void ModeConfirmation::ToIdle() {
  state_ = State::kIdle;
  engaged_.store(false, std::memory_order_relaxed);
}

void ModeConfirmation::StartEpoch(double now_s, double cpu_ns) {
  start_s_ = now_s;
  start_cpu_ns_ = cpu_ns;
  calls_ = 0;
  bytes_ = 0;
}

ConfirmationStep ModeConfirmation::OnCall(double bytes, double now_s,
                                          ConfirmationEnv& env) {
  MutexLock lock(&mu_);
  ConfirmationStep step;
  step.mode = pick_;
  Step(bytes, now_s, env, step);
  step.running = state_ == State::kPaused || state_ == State::kRunning;
  return step;
}

void ModeConfirmation::Step(double bytes, double now_s, ConfirmationEnv& env,
                            ConfirmationStep& step) {
  if (state_ == State::kIdle) return;
  if (state_ == State::kWaiting) {
    if (!slot_->TryAcquire(this)) return;
    ++stats_.started;
    d_.clear();
    epoch_ = 0;
    discarded_ = 0;
    last_bill_ns_ = 0;
    budget_wait_ = false;
    retry_s_ = now_s;
    state_ = State::kPaused;
  }
  if (state_ == State::kPaused) {
    // A pair starts only when the budget has room for what the last cost.
    if (now_s < retry_s_) return;
    if (!env.BudgetFits(last_bill_ns_)) {
      if (!budget_wait_) ++stats_.pauses;
      budget_wait_ = true;
      retry_s_ = now_s + options_.epoch_s;
      return;
    }
    budget_wait_ = false;
    StartEpoch(now_s, env.ProcessCpuNs());
    state_ = State::kRunning;
  }
  // Running: this call ends the epoch under way if the epoch is long
  // enough, and counts into the next one.
  if (now_s - start_s_ > options_.max_epoch_s) {
    // The method's calls became rare: the pair's epochs would span idle
    // time. Thrown away; the pair starts again.
    ++discarded_;
    ++stats_.discarded_pairs;
    epoch_ &= ~1;
    if (discarded_ >= options_.pairs) {
      Finish(now_s, step);
      return;
    }
    StartEpoch(now_s, env.ProcessCpuNs());
  } else if (calls_ >= options_.epoch_calls &&
             now_s - start_s_ >= options_.epoch_s) {
    EndEpoch(now_s, env.ProcessCpuNs(), step);
    if (state_ != State::kRunning) return;  // finished
    if (epoch_ % 2 == 0 && !env.BudgetFits(last_bill_ns_)) {
      // A pair ended and the budget has no room for another now: paused.
      ++stats_.pauses;
      budget_wait_ = true;
      retry_s_ = now_s + options_.epoch_s;
      state_ = State::kPaused;
      return;
    }
  }
  ++calls_;
  bytes_ += std::max(bytes, 1.0);
  step.mode = RivalEpoch(epoch_) ? rival_ : pick_;
}

void ModeConfirmation::EndEpoch(double now_s, double cpu_ns,
                                ConfirmationStep& step) {
  const double cpu = std::max(cpu_ns - start_cpu_ns_, 1.0);
  const double per_byte = cpu / std::max(bytes_, 1.0);
  if (epoch_ % 2 == 0) {  // the pair's first epoch
    first_cpu_ns_ = cpu;
    first_per_byte_ = per_byte;
    ++epoch_;
    StartEpoch(now_s, cpu_ns);
    return;
  }
  const bool rival_first = RivalEpoch(epoch_ - 1);
  const double a = rival_first ? per_byte : first_per_byte_;
  const double b = rival_first ? first_per_byte_ : per_byte;
  const double a_cpu = rival_first ? cpu : first_cpu_ns_;
  const double b_cpu = rival_first ? first_cpu_ns_ : cpu;
  d_.push_back(std::log(b / a));
  ++epoch_;
  // The bill: this pair's epoch in the dearer mode (as the pairs so far
  // say), times the share by which it is dearer.
  double mean = 0;
  for (double d : d_) mean += d;
  mean /= static_cast<double>(d_.size());
  const double bill =
      (mean > 0 ? b_cpu : a_cpu) * (1 - std::exp(-std::abs(mean)));
  step.bill_ns += bill;
  last_bill_ns_ = bill;
  stats_.billed_ns += bill;
  if (static_cast<int>(d_.size()) >= options_.pairs) {
    Finish(now_s, step);
    return;
  }
  StartEpoch(now_s, cpu_ns);
}

void ModeConfirmation::Finish(double now_s, ConfirmationStep& step) {
  const int n = static_cast<int>(d_.size());
  double mean = 0;
  double t = 0;
  bool rival = false;
  if (n >= 2) {
    for (double d : d_) mean += d;
    mean /= n;
    double squares = 0;
    for (double d : d_) squares += (d - mean) * (d - mean);
    const double se = std::sqrt(squares / (n - 1) / n);
    t = se > 0 ? mean / se
               : (mean < 0 ? -std::numeric_limits<double>::infinity() : 0.0);
    rival = mean < 0 && -t > TCritical5(n - 1);
  }
  step.verdict = rival ? rival_ : pick_;
  step.mode = *step.verdict;
  ++stats_.finished;
  if (rival) ++stats_.switched;
  stats_.last_pairs = n;
  stats_.last_mean = mean;
  stats_.last_t = t;
  stats_.last_end_s = now_s;
  slot_->Release(this);
  ToIdle();
}

}  // namespace arenarpc::internal
