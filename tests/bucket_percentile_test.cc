// PercentileBucket, shared by the message pool's growth guard and the gRPC
// arena-bytes percentiles.
#include "src/internal/bucket_percentile.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <optional>

namespace arenarpc::internal {
namespace {

TEST(BucketPercentileTest, EmptyHistogramHasNoPercentile) {
  const std::array<uint64_t, 4> counts = {};
  EXPECT_EQ(PercentileBucket(counts, 0.5), std::nullopt);
  EXPECT_EQ(PercentileBucket(counts, 0.0), std::nullopt);
}

TEST(BucketPercentileTest, FirstBucketWhoseCumulativeCountExceedsTheRank) {
  // 10 counts: ranks 0-4 in bucket 0, 5-7 in 1, 8 in 2, 9 in 3.
  const std::array<uint64_t, 4> counts = {5, 3, 1, 1};
  EXPECT_EQ(PercentileBucket(counts, 0.0), 0u);
  EXPECT_EQ(PercentileBucket(counts, 0.49), 0u);
  EXPECT_EQ(PercentileBucket(counts, 0.5), 1u);  // rank 5: the 6th count
  EXPECT_EQ(PercentileBucket(counts, 0.79), 1u);
  EXPECT_EQ(PercentileBucket(counts, 0.8), 2u);
  EXPECT_EQ(PercentileBucket(counts, 0.9), 3u);
  EXPECT_EQ(PercentileBucket(counts, 0.99), 3u);
}

TEST(BucketPercentileTest, EmptyBucketsAreSkipped) {
  const std::array<uint64_t, 6> counts = {0, 0, 4, 0, 0, 0};
  EXPECT_EQ(PercentileBucket(counts, 0.0), 2u);
  EXPECT_EQ(PercentileBucket(counts, 0.99), 2u);
}

TEST(BucketPercentileTest, QuantileOneOrAboveIsTheLastBucket) {
  // No cumulative count exceeds total: the last (open-ended) bucket.
  const std::array<uint64_t, 3> counts = {7, 0, 0};
  EXPECT_EQ(PercentileBucket(counts, 1.0), 2u);
  EXPECT_EQ(PercentileBucket(counts, 1.5), 2u);
}

TEST(BucketPercentileTest, CountsInTheLastBucketOnly) {
  const std::array<uint64_t, 3> counts = {0, 0, 9};
  EXPECT_EQ(PercentileBucket(counts, 0.0), 2u);
  EXPECT_EQ(PercentileBucket(counts, 0.5), 2u);
}

TEST(BucketPercentileTest, SingleBucket) {
  const std::array<uint64_t, 1> counts = {3};
  EXPECT_EQ(PercentileBucket(counts, 0.5), 0u);
  EXPECT_EQ(PercentileBucket(counts, 1.0), 0u);
}

TEST(BucketPercentileTest, LargeCountsDoNotOverflowTheRank) {
  const std::array<uint64_t, 3> counts = {uint64_t{1} << 40, uint64_t{1} << 40,
                                          0};
  EXPECT_EQ(PercentileBucket(counts, 0.4), 0u);
  EXPECT_EQ(PercentileBucket(counts, 0.6), 1u);
}

}  // namespace
}  // namespace arenarpc::internal
