// kAuto's sizes of one method's requests on calls that do not bring their
// size (callback and async calls; a sync call knows its wire bytes). The
// learner compares modes per wire byte, so such a call's request is sized
// at release with ByteSizeLong(): a walk of the whole message, 144-204 us
// on 520-650 KB requests (docs/raw/auto_budget/callback_real/sizing.txt),
// a large part of what learning costs there.
// Requests of one size need not be walked again and again: once kRun sized
// calls in a row came within 1/64 of the first of them, a timed call takes
// that size and only 1 in kCheckEvery at random is sized, to check; a size
// outside the band starts over (every timed call sized until kRun agree
// again), and so does a new decision (Forget()). The checks are drawn at
// random, not every 8th call: the learner hands trials to the modes in
// turn, so every 8th call could be one mode's, and a walk warms the cache
// for the release that follows it. An error of up to 1/64 in a call's bytes
// falls on every mode alike, so it widens the learner's noise a little and
// does not favour a mode.
//
// Thread safety: any thread; ForCall() is one relaxed atomic load.
#ifndef ARENARPC_SRC_GRPC_REQUEST_SIZES_H_
#define ARENARPC_SRC_GRPC_REQUEST_SIZES_H_

#include <atomic>
#include <cmath>
#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "arenarpc/internal/mutex.h"

namespace arenarpc::internal {

class RequestSizes {
 public:
  static constexpr int kRun = 8;
  static constexpr uint32_t kCheckEvery = 8;

  // The bytes to take for a timed call's request, or -1: size it.
  // `random`: a uniformly drawn number (a check when it is 0 mod
  // kCheckEvery).
  double ForCall(uint32_t random) const {
    const double known = known_.load(std::memory_order_relaxed);
    if (known < 0 || random % kCheckEvery == 0) return -1;
    return known;
  }

  // Learning starts again (a re-check): sizes are learned afresh.
  void Forget() {
    MutexLock lock(&mu_);
    run_ = 0;
    known_.store(-1, std::memory_order_relaxed);
  }

  // A timed call's request, sized.
  void Note(double bytes) {
    MutexLock lock(&mu_);
    if (run_ > 0 && std::fabs(bytes - anchor_) <= anchor_ / 64) {
      ++run_;
    } else {
      anchor_ = bytes;
      run_ = 1;
    }
    known_.store(run_ >= kRun ? anchor_ : -1, std::memory_order_relaxed);
  }

 private:
  std::atomic<double> known_{-1};
  Mutex mu_;
  double anchor_ ABSL_GUARDED_BY(mu_) = 0;
  int run_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace arenarpc::internal

#endif  // ARENARPC_SRC_GRPC_REQUEST_SIZES_H_
