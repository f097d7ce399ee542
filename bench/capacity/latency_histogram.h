// LatencyHistogram: a log-linear histogram of latencies in microseconds, in
// the manner of HdrHistogram (values below 2^kSubBits exact, then 2^kSubBits
// buckets per power of two, so a value read back is within 1/2^kSubBits =
// 1.6 % of the recorded one). Written here because Debian packages no C or
// C++ HdrHistogram; the percentile walk is the project's PercentileBucket
// (src/internal/bucket_percentile.h). Used by capacity_client.cc.
//
//   LatencyHistogram h;
//   h.Record(1234);            // microseconds
//   h.Percentile(0.99);        // the highest value of the p99's bucket
//
// Not thread-safe: the client guards each window's histogram with a mutex.
#ifndef ARENARPC_BENCH_CAPACITY_LATENCY_HISTOGRAM_H_
#define ARENARPC_BENCH_CAPACITY_LATENCY_HISTOGRAM_H_

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "src/internal/bucket_percentile.h"

namespace arenarpc::capacity {

class LatencyHistogram {
 public:
  static constexpr int kSubBits = 6;
  static constexpr uint64_t kSub = uint64_t{1} << kSubBits;
  // Values up to 2^kMaxBits us (~12.7 days); larger ones are clamped.
  static constexpr int kMaxBits = 40;

  LatencyHistogram() : counts_(Index((uint64_t{1} << kMaxBits) - 1) + 1, 0) {}

  // The bucket of `us`: exact below kSub, then kSub buckets per octave.
  static size_t Index(uint64_t us) {
    us = std::min(us, (uint64_t{1} << kMaxBits) - 1);
    if (us < kSub) return static_cast<size_t>(us);
    const int shift = std::bit_width(us) - 1 - kSubBits;  // >= 0
    return static_cast<size_t>(uint64_t(shift) * kSub + (us >> shift));
  }
  // The highest value that falls in bucket `index` (HdrHistogram's "highest
  // equivalent value"): percentiles never read below the truth.
  static uint64_t HighestInBucket(size_t index) {
    if (index < 2 * kSub) return index;
    const uint64_t shift = index / kSub - 1;
    const uint64_t mantissa = index - shift * kSub;  // in [kSub, 2 kSub)
    return ((mantissa + 1) << shift) - 1;
  }

  void Record(uint64_t us) {
    ++counts_[Index(us)];
    ++total_;
    max_ = std::max(max_, us);
  }
  void Merge(const LatencyHistogram& other) {
    for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
    total_ += other.total_;
    max_ = std::max(max_, other.max_);
  }
  uint64_t count() const { return total_; }
  uint64_t max() const { return max_; }

  // The q-quantile (0 <= q < 1) in microseconds; 0 when empty.
  uint64_t Percentile(double q) const {
    const std::optional<size_t> bucket = internal::PercentileBucket(counts_, q);
    if (!bucket) return 0;
    return std::min(HighestInBucket(*bucket), max_);
  }

 private:
  std::vector<uint64_t> counts_;
  uint64_t total_ = 0;
  uint64_t max_ = 0;
};

}  // namespace arenarpc::capacity

#endif  // ARENARPC_BENCH_CAPACITY_LATENCY_HISTOGRAM_H_
