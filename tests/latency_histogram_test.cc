// LatencyHistogram (bench/capacity/latency_histogram.h): the capacity
// client's log-linear latency histogram; its percentiles must be within
// 1/64 above the true value and never below it.
#include "bench/capacity/latency_histogram.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>

namespace arenarpc::capacity {
namespace {

TEST(LatencyHistogramTest, EmptyHasZeroPercentiles) {
  LatencyHistogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.Percentile(0.5), 0u);
  EXPECT_EQ(h.Percentile(0.999), 0u);
}

TEST(LatencyHistogramTest, SmallValuesAreExact) {
  for (uint64_t v = 0; v < 2 * LatencyHistogram::kSub; ++v) {
    EXPECT_EQ(LatencyHistogram::HighestInBucket(LatencyHistogram::Index(v)), v);
  }
}

TEST(LatencyHistogramTest, BucketHoldsTheValueWithinOneSixtyFourth) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 100000; ++i) {
    const uint64_t v = rng() >> (24 + rng() % 40);  // every magnitude
    const uint64_t high =
        LatencyHistogram::HighestInBucket(LatencyHistogram::Index(v));
    ASSERT_GE(high, v);
    ASSERT_LE(static_cast<double>(high - v),
              static_cast<double>(v) / LatencyHistogram::kSub)
        << v;
  }
}

TEST(LatencyHistogramTest, IndexIsMonotonic) {
  size_t last = 0;
  for (uint64_t v = 0; v < (uint64_t{1} << 20); v += 7) {
    const size_t index = LatencyHistogram::Index(v);
    ASSERT_GE(index, last) << v;
    last = index;
  }
}

TEST(LatencyHistogramTest, PercentilesOfAUniformRun) {
  LatencyHistogram h;
  for (uint64_t v = 1; v <= 100000; ++v) h.Record(v);
  EXPECT_EQ(h.count(), 100000u);
  EXPECT_EQ(h.max(), 100000u);
  for (double q : {0.5, 0.9, 0.99, 0.999}) {
    const double truth = q * 100000;
    EXPECT_GE(static_cast<double>(h.Percentile(q)), truth) << q;
    EXPECT_LE(static_cast<double>(h.Percentile(q)), truth * (1 + 1.0 / 64) + 1)
        << q;
  }
}

TEST(LatencyHistogramTest, TheTailIsNotAveragedAway) {
  // 990 fast calls and 10 at 2 s: p99 must be the slow ones.
  LatencyHistogram h;
  for (int i = 0; i < 990; ++i) h.Record(500);
  for (int i = 0; i < 10; ++i) h.Record(2000000);
  EXPECT_LE(h.Percentile(0.5), 507u);
  EXPECT_GE(h.Percentile(0.99), 2000000u);
  EXPECT_EQ(h.Percentile(0.999), 2000000u);  // never above the max
}

TEST(LatencyHistogramTest, MergeAddsCountsAndKeepsTheMax) {
  LatencyHistogram a, b;
  for (int i = 0; i < 100; ++i) a.Record(100);
  for (int i = 0; i < 100; ++i) b.Record(10000);
  a.Merge(b);
  EXPECT_EQ(a.count(), 200u);
  EXPECT_EQ(a.max(), 10000u);
  EXPECT_EQ(a.Percentile(0.25), 100u);
  EXPECT_GE(a.Percentile(0.75), 10000u);
}

TEST(LatencyHistogramTest, HugeValuesAreClamped) {
  LatencyHistogram h;
  h.Record(~uint64_t{0});
  EXPECT_EQ(h.count(), 1u);
  EXPECT_GT(h.Percentile(0.5), uint64_t{1} << 39);
}

}  // namespace
}  // namespace arenarpc::capacity
