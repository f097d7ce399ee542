// The message pool's growth guard: the content size above which a returned
// instance is rebuilt, so small inputs never carry large capacity.
//
//   SizeGuard guard(options);
//   guard.Observe(content_bytes);  // a sample of recent content sizes
//   if (peak > guard.Bound()) rebuild();
//
// Bound() is min(hard_cap_bytes, max(min_bound_bytes, slack x the top of
// the power-of-two bucket holding the `percentile` of recent sizes)),
// recomputed every 64 samples; counts are halved every 1024 samples, so
// the bound follows a shift of the traffic. Thread-safe; concurrent
// Observe() calls make the bound approximate, never out of its limits.
#ifndef ARENARPC_SRC_INTERNAL_SIZE_GUARD_H_
#define ARENARPC_SRC_INTERNAL_SIZE_GUARD_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "arenarpc/message_pool.h"

namespace arenarpc::internal {

class SizeGuard {
 public:
  explicit SizeGuard(const MessagePoolOptions& options);
  SizeGuard(const SizeGuard&) = delete;
  SizeGuard& operator=(const SizeGuard&) = delete;

  // Records one content size (serialized bytes). Callers sample: every
  // call touches a shared histogram.
  void Observe(size_t size);
  size_t Bound() const { return bound_.load(std::memory_order_relaxed); }
  // Sizes observed so far (the first bound is computed from
  // kFirstBoundSamples; Bound() is the hard cap until then).
  uint32_t Samples() const { return samples_.load(std::memory_order_relaxed); }
  static constexpr uint32_t kFirstBoundSamples = 64;

 private:
  const double percentile_;
  const double slack_;
  const size_t min_bound_bytes_;
  const size_t hard_cap_bytes_;

  // Bucket b counts sizes of bit_width b: [2^(b-1), 2^b).
  static constexpr int kBuckets = 40;
  std::atomic<uint32_t> histogram_[kBuckets] = {};
  std::atomic<uint32_t> samples_{0};
  std::atomic<size_t> bound_;
};

}  // namespace arenarpc::internal

#endif  // ARENARPC_SRC_INTERNAL_SIZE_GUARD_H_
