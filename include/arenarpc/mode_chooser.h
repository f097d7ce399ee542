// Picks the cheapest mode from a stream of measured costs, with hysteresis.
//
//   arenarpc::CostProbe probe(&MyRequest::default_instance());
//   arenarpc::ModeChooser chooser;                 // starts on kArena
//   chooser.Observe(probe.Measure(wire));          // per sampled message
//   arenarpc::AllocationMode m = chooser.current();
//
// Each sample's costs are compared with the current mode's on the same
// bytes (a ratio per mode, averaged). After min_samples the chooser moves
// only to a mode cheaper by more than `margin` and by three standard
// errors, in `confirmations` samples in a row (the first move needs no
// streak): noise does not make it flap, a lasting shift of traffic moves it.
// Shadow measurement and arenarpc_advise use it; kAuto learns on its real
// calls instead (src/internal/auto_learner.h).
//
// Thread safety: Observe() from one thread at a time; current() and
// snapshot() from any thread, concurrently with Observe().
#ifndef ARENARPC_MODE_CHOOSER_H_
#define ARENARPC_MODE_CHOOSER_H_

#include <array>
#include <atomic>
#include <cstdint>

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

  explicit ModeChooser(const ModeChooserOptions& options = {})
      : options_(options), mode_(options.initial) {
    state_.mode = options.initial;
  }

  // Folds one sample in (ignored unless costs.ok); returns the mode chosen.
  AllocationMode Observe(const ModeCosts& costs);
  AllocationMode current() const {
    return mode_.load(std::memory_order_relaxed);
  }
  Snapshot snapshot() const {
    internal::MutexLock lock(&mu_);
    return state_;
  }

 private:
  // Since the last move: each mode's cost ratio to the current one, averaged,
  // and its square's (for the standard error).
  struct Run {
    int samples = 0;
    int candidate = -1;  // the mode winning lately
    int streak = 0;      // samples in a row it has won
    std::array<double, kNumAllocationModes> mean = {}, square = {};
  };

  const ModeChooserOptions options_;
  std::atomic<AllocationMode> mode_;
  mutable internal::Mutex mu_;
  Snapshot state_ ABSL_GUARDED_BY(mu_);
  Run run_ ABSL_GUARDED_BY(mu_);
};

}  // namespace arenarpc

#endif  // ARENARPC_MODE_CHOOSER_H_
