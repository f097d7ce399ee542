// The message pool's growth guard: the content size above which a returned
// instance is rebuilt, so small inputs never carry large capacity.
//
//   guard.Observe(content_bytes);  // a sample of recent content sizes
//   if (peak > guard.Bound()) rebuild();
// Bound() is min(hard_cap_bytes, max(min_bound_bytes, slack x the top of
// the power-of-two bucket of the `percentile`)), recomputed every 64
// samples; counts halve every 1024, following the traffic. Thread-safe
// (under races the bound is approximate, never out of its limits).
#ifndef ARENARPC_SRC_INTERNAL_SIZE_GUARD_H_
#define ARENARPC_SRC_INTERNAL_SIZE_GUARD_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "arenarpc/message_pool.h"

namespace arenarpc::internal {

class SizeGuard {
 public:
  explicit SizeGuard(const MessagePoolOptions& options)
      : options_(options), bound_(options.hard_cap_bytes) {}
  SizeGuard(const SizeGuard&) = delete;
  SizeGuard& operator=(const SizeGuard&) = delete;

  // One content size in serialized bytes (sample: the histogram is shared).
  void Observe(size_t size);
  size_t Bound() const { return bound_.load(std::memory_order_relaxed); }
  // Sizes observed so far (Bound() is the hard cap for the first 64).
  uint32_t Samples() const { return samples_.load(std::memory_order_relaxed); }

 private:
  const MessagePoolOptions options_;

  // Bucket b counts sizes of bit_width b: [2^(b-1), 2^b).
  static constexpr int kBuckets = 40;
  std::atomic<uint32_t> histogram_[kBuckets] = {};
  std::atomic<uint32_t> samples_{0};
  std::atomic<size_t> bound_;
};

}  // namespace arenarpc::internal

#endif  // ARENARPC_SRC_INTERNAL_SIZE_GUARD_H_
