// ModeChooser (shadow measurement's and arenarpc_advise's): converging,
// following a shift, staying put on ties, ignoring failed samples. kAuto's
// learner has its own tests (tests/auto_learner_test.cc).
#include "arenarpc/mode_chooser.h"

#include <gtest/gtest.h>

#include <random>

namespace arenarpc {
namespace {

constexpr int kHeap = static_cast<int>(AllocationMode::kHeap);
constexpr int kArena = static_cast<int>(AllocationMode::kArena);
constexpr int kReuse = static_cast<int>(AllocationMode::kReuse);

// Costs of a synthetic type, with +-noise (relative) on every sample.
ModeCosts Costs(std::mt19937& rng, double heap, double arena, double reuse,
                double noise = 0.1) {
  std::uniform_real_distribution<double> jitter(1.0 - noise, 1.0 + noise);
  ModeCosts c;
  c.ok = true;
  c.ns[kHeap] = heap * jitter(rng);
  c.ns[kArena] = arena * jitter(rng);
  c.ns[kReuse] = reuse * jitter(rng);
  return c;
}

TEST(ModeChooserTest, ConvergesToOppositeWinnersOfTwoTypes) {
  std::mt19937 rng(1);
  ModeChooser batch;  // a big all-repeated batch: reuse keeps it all
  ModeChooser tiny;   // a few bytes: a plain new/delete is cheapest
  EXPECT_EQ(batch.current(), AllocationMode::kArena);
  for (int i = 0; i < 200; ++i) {
    batch.Observe(Costs(rng, 1500, 820, 520));
    tiny.Observe(Costs(rng, 90, 210, 150));
  }
  EXPECT_EQ(batch.current(), AllocationMode::kReuse);
  EXPECT_EQ(tiny.current(), AllocationMode::kHeap);
  // One decision each, no flapping under 10 % noise.
  EXPECT_EQ(batch.snapshot().switches, 1u);
  EXPECT_EQ(tiny.snapshot().switches, 1u);
  EXPECT_EQ(batch.snapshot().samples, 200u);
  EXPECT_NEAR(batch.snapshot().cost_ns[kReuse], 520, 60);
}

TEST(ModeChooserTest, SwitchesBackWhenTrafficShifts) {
  std::mt19937 rng(2);
  ModeChooser c;
  for (int i = 0; i < 50; ++i) c.Observe(Costs(rng, 1500, 820, 520));
  ASSERT_EQ(c.current(), AllocationMode::kReuse);
  // The traffic moves to a shape reuse cannot keep: arena wins.
  int moved_after = -1;
  for (int i = 0; i < 100 && moved_after < 0; ++i) {
    c.Observe(Costs(rng, 1500, 800, 1200));
    if (c.current() == AllocationMode::kArena) moved_after = i;
  }
  EXPECT_GE(moved_after, 2);   // not on the first contrary sample...
  EXPECT_LE(moved_after, 30);  // ...but soon
  // And back.
  for (int i = 0; i < 100; ++i) c.Observe(Costs(rng, 1500, 820, 520));
  EXPECT_EQ(c.current(), AllocationMode::kReuse);
  EXPECT_EQ(c.snapshot().switches, 3u);
}

TEST(ModeChooserTest, StaysPutWhenModesTie) {
  std::mt19937 rng(3);
  ModeChooser c;
  for (int i = 0; i < 1000; ++i) c.Observe(Costs(rng, 100, 100, 101, 0.2));
  EXPECT_EQ(c.current(), AllocationMode::kArena);
  EXPECT_EQ(c.snapshot().switches, 0u);
}

TEST(ModeChooserTest, IgnoresFailedSamplesAndWaitsForEnough) {
  std::mt19937 rng(4);
  ModeChooserOptions o;
  o.min_samples = 8;
  ModeChooser c(o);
  ModeCosts bad;  // ok == false: did not parse
  for (int i = 0; i < 100; ++i) c.Observe(bad);
  EXPECT_EQ(c.snapshot().samples, 0u);
  for (int i = 0; i < 7; ++i) c.Observe(Costs(rng, 10, 100, 100));
  EXPECT_EQ(c.current(), AllocationMode::kArena);  // not enough yet
  c.Observe(Costs(rng, 10, 100, 100));
  EXPECT_EQ(c.current(), AllocationMode::kHeap);
}

}  // namespace
}  // namespace arenarpc
