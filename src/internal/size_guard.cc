#include "src/internal/size_guard.h"

#include <algorithm>
#include <bit>

#include "src/internal/bucket_percentile.h"

namespace arenarpc::internal {

void SizeGuard::Observe(size_t size) {
  const int bucket = std::min<int>(std::bit_width(size), kBuckets - 1);
  histogram_[bucket].fetch_add(1, std::memory_order_relaxed);
  const uint32_t n = samples_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (n % 64 != 0) return;
  uint64_t counts[kBuckets];
  for (int i = 0; i < kBuckets; ++i) {
    counts[i] = histogram_[i].load(std::memory_order_relaxed);
  }
  const size_t b =
      PercentileBucket(counts, options_.percentile).value_or(kBuckets - 1);
  const double upper = b == 0 ? 1.0 : static_cast<double>(uint64_t{1} << b);
  const size_t bound = static_cast<size_t>(options_.slack * upper);
  bound_.store(std::min(std::max(bound, options_.min_bound_bytes),
                        options_.hard_cap_bytes),
               std::memory_order_relaxed);
  if (n % 1024 == 0) {  // decay: recent sizes weigh more
    for (auto& h : histogram_) {
      h.store(h.load(std::memory_order_relaxed) / 2, std::memory_order_relaxed);
    }
  }
}

}  // namespace arenarpc::internal
