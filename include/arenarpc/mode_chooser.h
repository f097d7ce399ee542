// Picks the cheapest mode from a stream of measured costs, with hysteresis:
// the deciding half of AllocationMode::kAuto.
//
//   arenarpc::CostProbe probe(&MyRequest::default_instance());
//   arenarpc::ModeChooser chooser;                 // starts on kArena
//   chooser.Observe(probe.Measure(wire));          // per sampled message
//   arenarpc::AllocationMode m = chooser.current();
//
// Each sample's costs are compared with the current mode's on the same bytes
// (a ratio per mode, averaged). After min_samples the chooser moves to
// another mode only when that mode is cheaper by more than `margin` and by
// three standard errors, in `confirmations` samples in a row (the very
// first move, at min_samples, needs no streak), so noise does not make it flap;
// a lasting shift of the traffic moves it.
//
// Thread safety: Observe() from one thread at a time; current() and
// snapshot() from any thread, concurrently with Observe().
//
// AutoLearner is kAuto's chooser (ModeChooser stays shadow measurement's and
// arenarpc_advise's): a sequential test that stops measuring a mode once it
// is surely more expensive, settles, then re-checks rarely. LearningBudget
// caps what learning costs against the process's CPU.
#ifndef ARENARPC_MODE_CHOOSER_H_
#define ARENARPC_MODE_CHOOSER_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "arenarpc/allocation_mode.h"
#include "arenarpc/cost_probe.h"
#include "arenarpc/internal/mutex.h"

namespace arenarpc {

struct ModeChooserOptions {
  AllocationMode initial = AllocationMode::kArena;  // before any sample
  double alpha = 0.1;     // weight of a new sample in the averages
  int min_samples = 8;    // samples before a move (also after one)
  double margin = 0.03;   // how much cheaper a mode must be to move
  int confirmations = 6;  // samples in a row it must be so
};

class ModeChooser {
 public:
  struct Snapshot {
    AllocationMode mode = AllocationMode::kArena;
    std::array<double, kNumAllocationModes> cost_ns = {};  // smoothed
    uint64_t samples = 0;
    uint64_t switches = 0;
  };

  explicit ModeChooser(const ModeChooserOptions& options = {});

  // Folds one sample in (ignored unless costs.ok); returns the mode chosen.
  AllocationMode Observe(const ModeCosts& costs);
  AllocationMode current() const {
    return mode_.load(std::memory_order_relaxed);
  }
  Snapshot snapshot() const;

 private:
  const ModeChooserOptions options_;
  std::atomic<AllocationMode> mode_;
  mutable internal::Mutex mu_;
  Snapshot state_ ABSL_GUARDED_BY(mu_);
  int candidate_ ABSL_GUARDED_BY(mu_) = -1;  // the mode winning lately
  int streak_ ABSL_GUARDED_BY(mu_) = 0;      // samples in a row it has won
  int since_switch_ ABSL_GUARDED_BY(mu_) = 0;
  // Averaged cost ratio of each mode to the current one, and of its square
  // (for the standard error).
  std::array<double, kNumAllocationModes> ratio_mean_ ABSL_GUARDED_BY(mu_) = {};
  std::array<double, kNumAllocationModes> ratio_square_
      ABSL_GUARDED_BY(mu_) = {};
};

// kAuto's learning budget: the CPU deciding costs (serializing sampled
// calls on the call threads, re-parsing them on the measuring thread)
// against the process's CPU. Before each sample: Fits(); after: Spend().
// What it guarantees: spent <= max_cpu_share * process CPU + credit_ns +
// the one sample admitted last (a sample's cost is known only after it).
// Thread safety: Spend(), set_share() and share() from any thread; the rest
// from one thread.
class LearningBudget {
 public:
  // 2 % of the process's CPU by default (ServerOptions::automatic).
  static constexpr double kDefaultShare = 0.02;
  // A fresh process has used little CPU: this much may be spent before the
  // share applies, so the first samples are taken at once.
  static constexpr double kDefaultCreditNs = 5e6;

  explicit LearningBudget(double max_cpu_share = kDefaultShare,
                          double credit_ns = kDefaultCreditNs);

  // Atomic: an install may set it while the measuring thread reads it.
  void set_share(double share) {
    share_.store(share, std::memory_order_relaxed);
  }
  double share() const { return share_.load(std::memory_order_relaxed); }
  // Whether a sample expected to cost `expected_ns` fits now, the process
  // having used `process_ns` of CPU in all.
  bool Fits(double process_ns, double expected_ns) const;
  void Spend(double ns);
  double spent_ns() const;
  // What the last samples cost (a moving average): the expected cost of the
  // next one.
  double expected_ns() const { return expected_ns_; }
  void LearnSampleCost(double ns);

 private:
  std::atomic<double> share_;
  const double credit_ns_;
  std::atomic<uint64_t> spent_ns_{0};
  double expected_ns_ = 0;  // no guess before the first sample: the credit
};

// kAuto's choosing, per method. Each sample is every still-measured mode
// timed on the same bytes; the test is on the paired log cost ratios of two
// modes. From `min_samples` on, a mode is dropped (no longer measured) once
// its mean log ratio against another measured mode is above 0 by a
// one-sided Student t bound at 0.01 % per test. The error rate: a decision
// makes at most 6 tests (ordered pairs) per look and 22 looks, so a mode
// exactly as cheap as another is wrongly dropped in at most 1.3 % of
// decisions (Bonferroni; 1.25 % measured on simulated ties in the unit
// test), and a mode a few % cheaper than its rival far more rarely.
// While learning, calls run in a mode that looks `lead` (25 %) cheaper
// than the running one on the samples so far, from the first paired sample
// on (real calls: below).
// Settled when one mode is left, when all left are within `margin` of each
// other (surely), or after `max_samples`: the cheapest left, the current
// one if within the margin of it. `recheck_after_s` after settling it
// measures again, the same way, so a lasting change of traffic is followed
// within recheck_after_s plus one decision's samples (which the budget
// spaces out).
//
// Real calls (ObserveCall, ServerOptions::automatic.learn = kRealCalls):
// each sample is one call served in one mode (NextTrialMode(): the measured
// mode with the fewest calls), its cost per wire byte, so calls of different
// sizes compare. The test is unpaired (Welch): mode i is dropped once
// mean(log cost/byte, i) - mean(j) is above 0 by a one-sided t bound at
// 0.01 % with min(n_i, n_j) - 1 degrees of freedom (conservative). Looks
// are taken only when the fewest calls of a measured mode grows, from
// min_samples to max_calls_per_mode: at most 6 tests a look and 30 looks,
// so a mode as cheap as another is wrongly dropped in at most 1.8 % of
// decisions (Bonferroni; measured on simulated ties in the unit test).
// It settles as above, or when every measured mode has max_calls_per_mode
// calls. The lead rule waits for min_samples calls of the leader and of the
// running mode (one call is one noisy sample). Calls that mix sizes add
// variance (slower, not wrong: the modes see the same mix, taken in turn). With
// the prior (prior_min_bytes), a method of large calls decides without heap
// (see the option). Load(): a decision known beforehand (a decisions file),
// settled at once. Thread safety: Wants(), Observe() and ObserveCall() under
// the learner's lock, from any thread; current(), wants(), NextTrialMode(),
// excess_share() and snapshot() from any thread.
struct AutoLearnerOptions {
  AllocationMode initial = AllocationMode::kArena;  // before any decision
  int min_samples = 3;                              // looks start here
  int max_samples = 24;                             // a decision's most samples
  double margin = 0.03;  // modes closer than this tie
  // While learning, calls move to a mode this much cheaper on the samples
  // so far (paired: from the first; real calls: once it and the running
  // mode have min_samples calls; the decision itself waits for the test).
  double lead = 0.25;
  double recheck_after_s = 30;
  int max_calls_per_mode = 32;  // real calls: a decision's most per mode
  // Real calls, the prior (ServerOptions::automatic.prior): a method whose
  // calls carry at least `prior_min_bytes` on the wire (request and
  // response; the geometric mean of its timed calls, over its decisions)
  // decides without heap: heap is not put on trial at all, unless the
  // cheapest mode measured so far costs less than `prior_heap_ns_per_byte`
  // at a look (then heap is measured like the others, from that look on).
  // A method's first decision starts without heap and takes heap in as
  // soon as a timed call shows the method small. 0: off (every mode
  // measured).
  double prior_min_bytes = 0;
  double prior_heap_ns_per_byte = 0.5;
};

enum class DecisionSource { kNone = 0, kLearned, kPrior, kLoaded };
// "none", "learned", "prior", "loaded".
const char* DecisionSourceName(DecisionSource source);

class AutoLearner {
 public:
  struct Snapshot {
    AllocationMode mode = AllocationMode::kArena;
    std::array<double, kNumAllocationModes> cost_ns =
        {};                                               // mean, last decision
    std::array<bool, kNumAllocationModes> measured = {};  // not dropped yet
    bool settled = false;
    uint64_t samples = 0;  // in all
    uint64_t switches = 0;
    uint64_t decisions = 0;  // settlings, the first and the re-checks'
    uint64_t dropped_modes = 0;
    uint64_t first_decision_samples = 0;  // samples the first one took
    double first_decision_s = -1;         // when it was taken (-1: not yet)
    // How the running decision came about: kLearned (every mode measured),
    // kPrior (learned, heap held out by the prior), kLoaded (Load(), not
    // re-checked since); kNone before the first.
    DecisionSource source = DecisionSource::kNone;
    bool prior_held_out = false;   // heap held out in this decision so far
    uint64_t prior_decisions = 0;  // decisions taken with heap held out
    uint64_t prior_released = 0;   // times the evidence took heap back in
  };

  explicit AutoLearner(const AutoLearnerOptions& options = {});

  // Whether samples are wanted at `now_s`; starts a re-check when one is due.
  bool Wants(double now_s);
  // Folds one sample in (ignored unless costs.ok); only the modes of
  // measured() need costs. Returns the mode calls should run in.
  AllocationMode Observe(const ModeCosts& costs, double now_s);
  // Real calls: one call served in `mode` cost `cost_ns` of CPU for
  // `bytes` on the wire (request and response). Ignored when not learning
  // or `mode` is no longer measured (a call in flight when it was dropped).
  AllocationMode ObserveCall(AllocationMode mode, double cost_ns, double bytes,
                             double now_s);
  // Real calls: the mode the next measured call runs in: the measured mode
  // with the fewest trials handed out, ties in turn (heap, arena, reuse,
  // ...). CancelTrial(): that trial was not run after all.
  AllocationMode NextTrialMode();
  void CancelTrial(AllocationMode mode);
  // Discards the samples of the decision under way (none if settled): the
  // method changes how it learns (real calls to paired samples), and a
  // decision does not mix the two. The running mode stays.
  void RestartDecision();
  // Real calls: the share of a call in `mode` that is lost against the
  // cheapest measured mode so far (0 when it is the cheapest or unknown).
  double excess_share(AllocationMode mode) const {
    return excess_[static_cast<int>(mode)].load(std::memory_order_relaxed);
  }
  // Real calls, settled: the cheapest other mode (measured or dropped in
  // the decision just taken, with at least min_samples calls) whose cost
  // per byte is within `within` (0.15: 15 %) of the chosen mode's, or of
  // which the chosen one is within `within`; none otherwise, and after a
  // side-thread decision.
  std::optional<AllocationMode> CloseRival(double within) const;
  // A decision known before any call (a decisions file,
  // ServerOptions::automatic.decisions_path): settled in `mode` with these
  // costs (per call, ns; 0: unknown) at `now_s`, source kLoaded, re-checked
  // recheck_after_s later as a learned one is. Ignored once a decision was
  // taken (false then).
  bool Load(AllocationMode mode,
            const std::array<double, kNumAllocationModes>& cost_ns,
            double now_s);
  // Settled: calls run in `mode` from now on (a confirmation's verdict,
  // src/internal/mode_confirmation.h); the re-check stays due when it was.
  // Ignored while learning.
  void Confirm(AllocationMode mode);
  // The modes a sample must time now, bit i for AllocationMode i.
  unsigned measured_mask() const {
    return mask_.load(std::memory_order_relaxed);
  }
  AllocationMode current() const {
    return mode_.load(std::memory_order_relaxed);
  }
  bool wants() const { return wants_.load(std::memory_order_relaxed); }
  // When the next re-check starts (-1: not settled).
  double next_check_s() const;
  Snapshot snapshot() const;

 private:
  using Pairs =
      std::array<std::array<double, kNumAllocationModes>, kNumAllocationModes>;
  void StartDecision() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The prior: whether the method's calls are large (prior_min_bytes), and
  // heap taken back into the decision under way.
  bool PriorHoldsHeap() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReleaseHeap() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves calls to a measured mode `lead` cheaper (level: mean log cost).
  void Lead(const std::array<double, kNumAllocationModes>& level)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // One look: drops the modes surely worse (diff[i][j] - bound[i][j] > 0),
  // settles when one is left, all tie, or `last`.
  void Decide(const std::array<double, kNumAllocationModes>& level,
              const Pairs& diff, const Pairs& bound, bool last, double now_s)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Settle(int mode, double now_s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SetMode(int mode) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Of the log ratio of modes i and j over this decision's samples.
  double Mean(int i, int j) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  double StandardError(int i, int j) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const AutoLearnerOptions options_;
  std::atomic<AllocationMode> mode_;
  std::atomic<unsigned> mask_{(1u << kNumAllocationModes) - 1};
  std::atomic<bool> wants_{true};
  mutable internal::Mutex mu_;
  Snapshot state_ ABSL_GUARDED_BY(mu_);
  double next_check_s_ ABSL_GUARDED_BY(mu_) = -1;
  int n_ ABSL_GUARDED_BY(mu_) = 0;  // samples of this decision
  // Per mode: sum of log cost; per pair: sums of the log ratio and its
  // square, over this decision's samples.
  std::array<double, kNumAllocationModes> log_sum_ ABSL_GUARDED_BY(mu_) = {};
  Pairs pair_sum_ ABSL_GUARDED_BY(mu_) = {};
  Pairs pair_square_ ABSL_GUARDED_BY(mu_) = {};
  // Real calls, per mode over this decision: calls, sums of log cost per
  // byte and of its square; the fewest calls of a measured mode at the
  // last look.
  std::array<int, kNumAllocationModes> calls_ ABSL_GUARDED_BY(mu_) = {};
  std::array<double, kNumAllocationModes> call_sum_ ABSL_GUARDED_BY(mu_) = {};
  std::array<double, kNumAllocationModes> call_square_
      ABSL_GUARDED_BY(mu_) = {};
  int looked_at_ ABSL_GUARDED_BY(mu_) = 0;
  // The prior: mean log wire bytes of the method's timed calls (every
  // decision), and how many.
  double bytes_log_mean_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t bytes_n_ ABSL_GUARDED_BY(mu_) = 0;
  // Trials handed out per mode this decision (calls in flight included).
  std::array<std::atomic<int>, kNumAllocationModes> issued_ = {};
  std::atomic<int> last_trial_{-1};
  std::array<std::atomic<double>, kNumAllocationModes> excess_ = {};
};

}  // namespace arenarpc

#endif  // ARENARPC_MODE_CHOOSER_H_
