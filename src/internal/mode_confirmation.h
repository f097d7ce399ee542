// kAuto's confirmation of a close real-call decision by the whole process's
// CPU (AutoOptions::confirm, arenarpc/grpc/server_options.h). The pure
// logic: epochs, the test, the verdict, the bill; the clocks and the budget
// are injected (ConfirmationEnv), so it is tested without time passing.
// Used by src/grpc/method_meter.cc.
//
//   ConfirmationSlot slot;                        // one per process
//   ModeConfirmation c(options, &slot);           // one per method
//   c.Request(kReuse, kArena);                    // the learner settled close
//   ConfirmationStep s = c.OnCall(bytes, now_s, env);  // every call
//   serve the call in s.mode; bill s.bill_ns; s.verdict: the mode from now on
//
// Why: the real-call learner times a call on its own thread; a mode's cost
// on gRPC's other threads (and what it does to their caches) is not in
// that window. When two modes are close per call, the process's CPU is
// what decides: calls of the method run in epochs, all of an epoch's calls
// in one mode, A B B A A B B A ... (A the learner's pick, B its rival: a
// linear drift of the machine cancels within each two pairs), and each
// epoch's cost is the process's CPU over the epoch per request byte of the
// method's calls started in it (per call where the size is not known when
// the call starts: callback calls). Other methods keep their modes: their
// CPU is common to both sides (noise, not bias). One method of the process
// confirms at a time (the slot).
//
// The test: over `pairs` epoch pairs, d = log(B's cost / A's cost) per
// pair; B is chosen only if mean(d) < 0 by a one-sided Student t bound at
// 5 % with pairs - 1 degrees of freedom; otherwise (inconclusive, or A
// cheaper) A stays. So when B is not cheaper than A, a confirmation
// switches to it in at most 5 % of confirmations (and when the two tie
// such a switch costs nothing).
//
// Cost: the epochs in the dearer mode. After each pair the bill is that
// pair's CPU in the mode the pairs so far say is dearer times the share by
// which it is dearer (1 - exp(-|mean d|); noise makes |mean d| too large,
// never too small on average); a pair starts only while the budget has
// room for what the last pair cost (ConfirmationEnv::BudgetFits),
// otherwise calls run in A and the pair waits (paused, asked again every
// epoch_s). With modes `x` apart, a confirmation costs about x/2 of the
// method's CPU while it runs.
// Time: 2 x pairs epochs of at least epoch_calls calls and epoch_s
// seconds: with the defaults (8 pairs, 16 calls, 0.25 s) 4 s at 64 calls/s
// or more, 16 x 16 / rate s below (5.3 s at 48 calls/s, 9.5 s at 27).
// An epoch that runs past max_epoch_s (the method's calls became rare) is
// thrown away with its pair; after `pairs` such pairs the confirmation
// ends inconclusive (A stays).
//
// Thread safety: every member from any thread (one lock; OnCall runs on
// every call of the method only while engaged(), which is one atomic
// load). Lifetime: the slot must outlive its confirmations.
#ifndef ARENARPC_SRC_INTERNAL_MODE_CONFIRMATION_H_
#define ARENARPC_SRC_INTERNAL_MODE_CONFIRMATION_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "arenarpc/allocation_mode.h"
#include "arenarpc/internal/mutex.h"

namespace arenarpc::internal {

struct ModeConfirmationOptions {
  int pairs = 8;          // epoch pairs a confirmation takes (>= 2)
  int epoch_calls = 16;   // an epoch's fewest calls
  double epoch_s = 0.25;  // and its shortest time
  double max_epoch_s = 5;
};

// At most one confirmation of the process runs at a time.
class ConfirmationSlot {
 public:
  bool TryAcquire(const void* owner);
  void Release(const void* owner);
  const void* owner() const { return owner_.load(std::memory_order_acquire); }

 private:
  std::atomic<const void*> owner_{nullptr};
};

// What a confirmation reads: injected (tests), the real clocks in
// method_meter.cc.
class ConfirmationEnv {
 public:
  virtual ~ConfirmationEnv() = default;
  // The process's CPU so far, ns (read when an epoch ends).
  virtual double ProcessCpuNs() = 0;
  // Whether a pair expected to cost `expected_ns` fits kAuto's learning
  // budget now.
  virtual bool BudgetFits(double expected_ns) = 0;
};

struct ConfirmationStep {
  AllocationMode mode = AllocationMode::kArena;  // the call runs in it
  double bill_ns = 0;  // a pair's cost, for the learning budget
  // The confirmation ended: calls run in this mode from now on.
  std::optional<AllocationMode> verdict;
  // It holds the slot (runs, or waits for the budget); false while it
  // waits for the slot: the method's calls then go as if settled.
  bool running = false;
};

class ModeConfirmation {
 public:
  struct Stats {
    uint64_t requested = 0;
    uint64_t started = 0;  // got the slot
    uint64_t finished = 0;
    uint64_t switched = 0;  // verdicts for the rival
    uint64_t discarded_pairs = 0;
    uint64_t pauses = 0;  // pairs that waited for the budget
    double billed_ns = 0;
    // The last finished one: pairs, mean log ratio (rival / pick; < 0: the
    // rival cheaper), its t statistic, and when it ended.
    int last_pairs = 0;
    double last_mean = 0;
    double last_t = 0;
    double last_end_s = -1;
  };

  ModeConfirmation(const ModeConfirmationOptions& options,
                   ConfirmationSlot* slot);
  ModeConfirmation(const ModeConfirmation&) = delete;
  ModeConfirmation& operator=(const ModeConfirmation&) = delete;

  // The learner settled on `pick` with `rival` close: confirm when the slot
  // is free. Replaces a confirmation not started yet; ignored while one
  // runs.
  void Request(AllocationMode pick, AllocationMode rival);
  // Drops a confirmation waiting for the slot (the learner learns again).
  // Returns true if one was waiting.
  bool Cancel();
  // Requested or running: OnCall() decides the calls' modes.
  bool engaged() const { return engaged_.load(std::memory_order_relaxed); }
  // Running (holds the slot).
  bool running() const;
  // A call of the method starts (`bytes`: its request's; 1 if unknown).
  // While waiting for the slot it tries to take it; the step's mode is the
  // pick unless an epoch in the rival's mode runs.
  ConfirmationStep OnCall(double bytes, double now_s, ConfirmationEnv& env);
  Stats stats() const;

 private:
  enum class State { kIdle, kWaiting, kPaused, kRunning };
  // Epoch k of the ABBA order runs the rival: k = 1, 2, 5, 6, 9, ...
  static bool RivalEpoch(int k) { return ((k + 1) / 2) % 2 == 1; }
  void Step(double bytes, double now_s, ConfirmationEnv& env,
            ConfirmationStep& step) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StartEpoch(double now_s, double cpu_ns)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The epoch under way ends at (now_s, cpu_ns); after the last pair,
  // the verdict.
  void EndEpoch(double now_s, double cpu_ns, ConfirmationStep& step)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Finish(double now_s, ConfirmationStep& step)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ToIdle() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ModeConfirmationOptions options_;
  ConfirmationSlot* const slot_;
  std::atomic<bool> engaged_{false};
  mutable Mutex mu_;
  State state_ ABSL_GUARDED_BY(mu_) = State::kIdle;
  AllocationMode pick_ ABSL_GUARDED_BY(mu_) = AllocationMode::kArena;
  AllocationMode rival_ ABSL_GUARDED_BY(mu_) = AllocationMode::kArena;
  // The epoch under way: its index, start, calls and bytes.
  int epoch_ ABSL_GUARDED_BY(mu_) = 0;
  double start_s_ ABSL_GUARDED_BY(mu_) = 0;
  double start_cpu_ns_ ABSL_GUARDED_BY(mu_) = 0;
  int calls_ ABSL_GUARDED_BY(mu_) = 0;
  double bytes_ ABSL_GUARDED_BY(mu_) = 0;
  // The first epoch of the pair under way: CPU and CPU per byte.
  double first_cpu_ns_ ABSL_GUARDED_BY(mu_) = 0;
  double first_per_byte_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<double> d_ ABSL_GUARDED_BY(mu_);     // per pair: log(B / A)
  int discarded_ ABSL_GUARDED_BY(mu_) = 0;         // of this confirmation
  double retry_s_ ABSL_GUARDED_BY(mu_) = 0;        // paused: asks again then
  bool budget_wait_ ABSL_GUARDED_BY(mu_) = false;  // paused by the budget
  double last_bill_ns_ ABSL_GUARDED_BY(mu_) = 0;
  Stats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace arenarpc::internal

#endif  // ARENARPC_SRC_INTERNAL_MODE_CONFIRMATION_H_
