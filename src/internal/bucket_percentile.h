// The bucket of a histogram that holds a percentile: the message pool's
// growth guard and the gRPC arena-bytes stats both read one.
//
//   uint64_t counts[4] = {5, 3, 1, 1};
//   PercentileBucket(counts, 0.5);  // 0: 5 of 10 counts are in bucket 0
//   PercentileBucket(counts, 0.9);  // 3
#ifndef ARENARPC_SRC_INTERNAL_BUCKET_PERCENTILE_H_
#define ARENARPC_SRC_INTERNAL_BUCKET_PERCENTILE_H_

#include <cstddef>
#include <cstdint>
#include <numeric>
#include <optional>
#include <span>

namespace arenarpc::internal {

// `counts`: the counts of ascending buckets. Returns the first bucket whose
// cumulative count exceeds q x total (the last bucket if none does, e.g.
// q >= 1), or nullopt if every count is 0. Approximate by design: a bucket,
// not a value inside it.
inline std::optional<size_t> PercentileBucket(std::span<const uint64_t> counts,
                                              double q) {
  const uint64_t total = std::reduce(counts.begin(), counts.end(), uint64_t{0});
  if (total == 0) return std::nullopt;
  const auto rank = static_cast<uint64_t>(q * static_cast<double>(total));
  uint64_t seen = 0;
  for (size_t i = 0; i + 1 < counts.size(); ++i) {
    seen += counts[i];
    if (seen > rank) return i;
  }
  return counts.size() - 1;
}

}  // namespace arenarpc::internal

#endif  // ARENARPC_SRC_INTERNAL_BUCKET_PERCENTILE_H_
