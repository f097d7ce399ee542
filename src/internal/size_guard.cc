#include "src/internal/size_guard.h"

#include <algorithm>
#include <bit>

#include "src/internal/bucket_percentile.h"

namespace arenarpc::internal {

SizeGuard::SizeGuard(const MessagePoolOptions& options)
    : percentile_(options.percentile),
      slack_(options.slack),
      min_bound_bytes_(options.min_bound_bytes),
      hard_cap_bytes_(options.hard_cap_bytes),
      bound_(options.hard_cap_bytes) {}

void SizeGuard::Observe(size_t size) {
  const int bucket = std::min<int>(std::bit_width(size), kBuckets - 1);
  histogram_[bucket].fetch_add(1, std::memory_order_relaxed);
  const uint32_t n = samples_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (n % kFirstBoundSamples != 0) return;
  // Recompute the bound from the histogram (approximate under races).
  uint64_t counts[kBuckets];
  for (int i = 0; i < kBuckets; ++i) {
    counts[i] = histogram_[i].load(std::memory_order_relaxed);
  }
  const size_t b = PercentileBucket(counts, percentile_).value_or(kBuckets - 1);
  // The bucket's top.
  const double upper = b == 0 ? 1.0 : static_cast<double>(uint64_t{1} << b);
  size_t bound = static_cast<size_t>(slack_ * upper);
  bound = std::max(bound, min_bound_bytes_);
  bound = std::min(bound, hard_cap_bytes_);
  bound_.store(bound, std::memory_order_relaxed);
  if (n % 1024 == 0) {  // decay: recent sizes weigh more
    for (auto& h : histogram_) {
      h.store(h.load(std::memory_order_relaxed) / 2, std::memory_order_relaxed);
    }
  }
}

}  // namespace arenarpc::internal
