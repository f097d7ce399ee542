// SizeGuard, the message pool's growth guard, on its own: the bound from
// the percentile, slack and limits, its cadence and its decay.
#include "src/internal/size_guard.h"

#include <gtest/gtest.h>

#include <cstddef>

#include "arenarpc/message_pool.h"

namespace arenarpc::internal {
namespace {

MessagePoolOptions Options() {
  MessagePoolOptions o;
  o.percentile = 0.9;
  o.slack = 2.0;
  o.min_bound_bytes = 0;
  o.hard_cap_bytes = size_t{1} << 30;
  return o;
}

void ObserveMany(SizeGuard& guard, size_t size, int n) {
  for (int i = 0; i < n; ++i) guard.Observe(size);
}

TEST(SizeGuardTest, StartsAtTheHardCap) {
  MessagePoolOptions o = Options();
  o.hard_cap_bytes = 12345;
  SizeGuard guard(o);
  EXPECT_EQ(guard.Bound(), 12345u);
}

TEST(SizeGuardTest, RecomputedEvery64Samples) {
  SizeGuard guard(Options());
  ObserveMany(guard, 1000, 63);
  EXPECT_EQ(guard.Bound(), size_t{1} << 30);
  guard.Observe(1000);
  // 1000 is in the bucket [512, 1024): slack x 1024.
  EXPECT_EQ(guard.Bound(), 2048u);
}

TEST(SizeGuardTest, FollowsThePercentileNotTheMaximum) {
  SizeGuard guard(Options());
  // 95% small, 5% large: the 90th percentile is small.
  for (int i = 0; i < 20 * 64; ++i) guard.Observe(i % 20 == 0 ? 100000 : 300);
  EXPECT_EQ(guard.Bound(), 2u * 512);
  MessagePoolOptions o = Options();
  o.percentile = 0.99;
  SizeGuard strict(o);
  for (int i = 0; i < 20 * 64; ++i) strict.Observe(i % 20 == 0 ? 100000 : 300);
  EXPECT_EQ(strict.Bound(), 2u * 131072);  // 100000 < 2^17
}

TEST(SizeGuardTest, SlackScalesTheBucketTop) {
  MessagePoolOptions o = Options();
  o.slack = 3.0;
  SizeGuard guard(o);
  ObserveMany(guard, 5000, 64);  // bucket [4096, 8192)
  EXPECT_EQ(guard.Bound(), 3u * 8192);
}

TEST(SizeGuardTest, ClampedToMinBoundAndHardCap) {
  MessagePoolOptions o = Options();
  o.min_bound_bytes = 16 << 10;
  SizeGuard low(o);
  ObserveMany(low, 10, 64);
  EXPECT_EQ(low.Bound(), size_t{16} << 10);

  o = Options();
  o.hard_cap_bytes = 100000;
  SizeGuard high(o);
  ObserveMany(high, 1 << 20, 64);
  EXPECT_EQ(high.Bound(), 100000u);
}

TEST(SizeGuardTest, HugeSizesLandInTheLastBucket) {
  SizeGuard guard(Options());
  ObserveMany(guard, ~size_t{0}, 64);
  EXPECT_EQ(guard.Bound(), size_t{1} << 30);  // the hard cap, no overflow
}

TEST(SizeGuardTest, DecayFollowsAShiftOfTheTraffic) {
  SizeGuard guard(Options());
  ObserveMany(guard, 100000, 1024);  // then halved
  EXPECT_EQ(guard.Bound(), 2u * 131072);
  // Small sizes only from now on: the halving lets them take over the
  // percentile within a few decays; without it, 1024 large samples would
  // keep it large for another 9216 samples.
  ObserveMany(guard, 300, 4 * 1024);
  EXPECT_EQ(guard.Bound(), 2u * 512);
}

}  // namespace
}  // namespace arenarpc::internal
