// kAuto's decision for one method, from its own calls: each timed call's
// cost is its CPU per byte on the wire, so calls of different sizes compare.
//
//   AutoLearner learner(options);
//   if (auto mode = learner.Trial(now_s)) { ...serve in *mode, time it...
//     learner.Observe(*mode, cost_ns, bytes, /*warming=*/false, now_s); }
//   AllocationMode m = learner.current();   // untimed calls
//
// The rule, the prior and warming: LearnerOptions, and docs/DESIGN.md,
// "auto: the learner". Thread safety: every member, from any thread.
#ifndef ARENARPC_SRC_INTERNAL_AUTO_LEARNER_H_
#define ARENARPC_SRC_INTERNAL_AUTO_LEARNER_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "arenarpc/allocation_mode.h"
#include "arenarpc/internal/mutex.h"

namespace arenarpc::internal {

struct LearnerOptions {
  // Each candidate mode gets this many timed calls, in turn; the lowest
  // median wins, the running mode stays within `margin` (ModeSamples,
  // arenarpc/allocation_mode.h). After `min_calls`, a mode at `drop_ratio`
  // times the best gets no more trials, and calls running in it move to the
  // best; a decision with one candidate left settles there.
  int calls_per_mode = ModeSamples::kPerMode;
  int min_calls = 6;
  double drop_ratio = 1.3;
  double margin = ModeSamples::kMargin;
  double recheck_after_s = 30;  // settled, it decides again this much later
  // The prior: heap is no candidate while the calls carry this much or more
  // (geometric mean; 0: no prior), unless the best costs under
  // `prior_heap_ns_per_byte`.
  double prior_min_bytes = 48 << 10;
  double prior_heap_ns_per_byte = 0.5;
  int max_warming = 32;  // reuse calls on a new pool instance left out
};

class AutoLearner {
 public:
  struct Snapshot {
    AllocationMode mode = AllocationMode::kArena;
    bool learning = true;
    DecisionSource source = DecisionSource::kNone;
    // Median ns per call of each mode in the last decision (or the one under
    // way), at the decision's mean bytes per call; 0: not measured.
    std::array<double, kNumAllocationModes> cost_ns = {};
    uint64_t observed = 0;  // timed calls observed, in all
    uint64_t warming = 0;   // timed calls left out as warming, in all
    uint64_t decisions = 0;
    uint64_t switches = 0;              // decisions that changed the mode
    uint64_t prior_decisions = 0;       // taken with heap held out
    uint64_t first_decision_calls = 0;  // observed when the first settled
    double first_decision_s = -1;       // seconds from the first observation
  };

  explicit AutoLearner(const LearnerOptions& options = {});

  AllocationMode current() const {
    return current_.load(std::memory_order_relaxed);
  }
  bool learning() const { return learning_.load(std::memory_order_relaxed); }
  // The mode of the next timed call, or none when settled (a re-check due
  // at `now_s` starts here). Cheap when settled: two atomic loads.
  std::optional<AllocationMode> Trial(double now_s);
  // One timed call in `mode`. True if it settled a decision.
  bool Observe(AllocationMode mode, double cost_ns, double bytes, bool warming,
               double now_s);
  // How much dearer `mode` is than the mode untimed calls run in (than the
  // cheapest measured while that one is not), as a share of its cost (0 when
  // not known or cheaper): what a trial in it wastes.
  double ExcessShare(AllocationMode mode) const;
  // Calls ran in `mode` in this decision (or the last): timed in it, or it
  // is the mode the decision began in. What a settled method gives back.
  bool Ran(AllocationMode mode) const;
  // Settled in `mode` from a decisions file, with its costs (ns per call).
  void Load(AllocationMode mode, double now_s,
            const std::array<double, kNumAllocationModes>& cost_ns = {});
  // The method's calls cannot be timed now: no trials until a re-check
  // `recheck_after_s` later; meanwhile calls run in the cheapest mode with
  // `min_calls` timed calls in this decision, if any (else `current`).
  void Pause(double now_s);
  Snapshot snapshot() const;

 private:
  void StartDecision() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool HeapHeldOut() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  double MeanBytes() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool Finished() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Settle(double now_s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SetCurrent(AllocationMode m) {
    current_.store(m, std::memory_order_relaxed);
  }
  void SettledUntil(double due_s) {
    learning_.store(false, std::memory_order_relaxed);
    recheck_at_s_.store(due_s, std::memory_order_relaxed);
  }

  const LearnerOptions options_;
  std::atomic<AllocationMode> current_{AllocationMode::kArena};
  std::atomic<bool> learning_{true};
  std::atomic<double> recheck_at_s_{-1};  // -1: none due
  mutable Mutex mu_;
  uint32_t turn_ ABSL_GUARDED_BY(mu_) = 0;  // the next candidate to try
  ModeSamples calls_ ABSL_GUARDED_BY(mu_);  // ns per byte, this decision's
  std::array<bool, kNumAllocationModes> candidate_ ABSL_GUARDED_BY(mu_);
  double log_bytes_sum_ ABSL_GUARDED_BY(mu_) = 0;   // this decision's calls
  int warming_ ABSL_GUARDED_BY(mu_) = 0;            // this decision's
  AllocationMode started_in_ ABSL_GUARDED_BY(mu_);  // the mode it began in
  double first_s_ ABSL_GUARDED_BY(mu_) = -1;
  Snapshot stats_ ABSL_GUARDED_BY(mu_);
};

// What learning may spend, process-wide: the CPU of trials in a dearer mode
// than the cheapest, and their clock reads, within `share` of the process's
// CPU plus a start-up credit (a fresh process has used little). Any thread.
class LearningBudget {
 public:
  static constexpr double kDefaultShare = 0.02;
  static constexpr double kCreditNs = 5e6;
  // The first install's share, then the smallest asked for.
  void set_share(double share) {
    double cur = share_.load(std::memory_order_relaxed);
    while (
        (cur < 0 || share < cur) &&
        !share_.compare_exchange_weak(cur, share, std::memory_order_relaxed)) {
    }
  }
  double share() const {
    const double s = share_.load(std::memory_order_relaxed);
    return s < 0 ? kDefaultShare : s;
  }
  bool HasRoom(double process_cpu_ns) const {
    return spent_ns() <= share() * process_cpu_ns + kCreditNs;
  }
  void Spend(double ns) {
    spent_ns_.fetch_add(static_cast<uint64_t>(ns > 0 ? ns : 0),
                        std::memory_order_relaxed);
  }
  double spent_ns() const {
    return static_cast<double>(spent_ns_.load(std::memory_order_relaxed));
  }

 private:
  std::atomic<double> share_{-1};  // -1: no install set it yet
  std::atomic<uint64_t> spent_ns_{0};
};

}  // namespace arenarpc::internal

#endif  // ARENARPC_SRC_INTERNAL_AUTO_LEARNER_H_
