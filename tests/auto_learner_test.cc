// kAuto's rule (ModeSamples, also shadow measurement's and arenarpc_advise's)
// and its learner (src/internal/auto_learner.h): the rule on known costs,
// the prior, warming, re-checks, loaded decisions, and its shared state
// under concurrent calls (the TSan leg runs this binary).
#include "src/internal/auto_learner.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <optional>
#include <random>
#include <thread>
#include <vector>

namespace arenarpc::internal {
namespace {

constexpr AllocationMode kHeap = AllocationMode::kHeap;
constexpr AllocationMode kArena = AllocationMode::kArena;
constexpr AllocationMode kReuse = AllocationMode::kReuse;

// Serves trials until the learner settles: each call of `bytes` costs
// `ns_per_byte[mode] * bytes`, times `noise()`. Returns the trials served.
template <class Noise>
int Decide(AutoLearner& l, std::array<double, 3> ns_per_byte, double bytes,
           double now_s, Noise noise) {
  int trials = 0;
  while (auto mode = l.Trial(now_s)) {
    const double cost = ns_per_byte[static_cast<int>(*mode)] * bytes * noise();
    ++trials;
    if (l.Observe(*mode, cost, bytes, false, now_s)) break;
    if (trials > 1000) break;
  }
  return trials;
}
int Decide(AutoLearner& l, std::array<double, 3> ns_per_byte, double bytes,
           double now_s = 0) {
  return Decide(l, ns_per_byte, bytes, now_s, [] { return 1.0; });
}

ModeSamples Samples(std::vector<double> heap, std::vector<double> arena,
                    std::vector<double> reuse) {
  ModeSamples s;
  for (double c : heap) s.Add(kHeap, c);
  for (double c : arena) s.Add(kArena, c);
  for (double c : reuse) s.Add(kReuse, c);
  return s;
}

TEST(ModeSamplesTest, TheLowestMedianWinsAndOutliersDoNotCount) {
  const ModeSamples s = Samples({30, 10, 11, 12}, {20, 21, 22}, {5, 9, 9e6});
  EXPECT_EQ(s.Median(kHeap), 11.5);  // even count: the middle two's mean
  EXPECT_EQ(s.Median(kReuse), 9);    // not moved by one page fault
  EXPECT_EQ(s.Cheapest(3), kReuse);
  EXPECT_EQ(s.Cheapest(3, kArena, ModeSamples::kMargin), kReuse);
  // A mode left out of `among` has no say.
  EXPECT_EQ(s.Cheapest(3, {}, 0, {true, true, false}), kHeap);
}

TEST(ModeSamplesTest, NoDecisionWithTooFewSamples) {
  ModeSamples s = Samples({1, 1}, {50, 50}, {});
  EXPECT_EQ(s.Median(kReuse), -1);
  EXPECT_EQ(s.Cheapest(3), std::nullopt);
  EXPECT_EQ(s.Cheapest(2), kHeap);
  // Only the modes with enough have a say, however cheap the others look.
  s.Add(kArena, 50);
  EXPECT_EQ(s.Cheapest(3), kArena);
  EXPECT_EQ(s.Cheapest(3, kHeap, 1.0), kArena);  // running, but too few
}

TEST(ModeSamplesTest, TheRunningModeStaysWithinTheMargin) {
  ModeSamples s = Samples({100}, {102.9}, {200});
  EXPECT_EQ(s.Cheapest(1), kHeap);
  EXPECT_EQ(s.Cheapest(1, kArena, 0.03), kArena);  // 2.9 % dearer: stays
  EXPECT_EQ(s.Cheapest(1, kArena, 0.02), kHeap);
  EXPECT_EQ(s.Cheapest(1, kReuse, 0.03), kHeap);
  s.Add(kArena, 104);  // median 103.45: beyond 3 %
  EXPECT_EQ(s.Cheapest(1, kArena, 0.03), kHeap);
}

TEST(AutoLearnerTest, TakesTheCheapestModeByMedianCostPerByte) {
  AutoLearner l({.prior_min_bytes = 0});
  EXPECT_EQ(l.current(), kArena);
  const int trials = Decide(l, {3.0, 2.0, 1.0}, 1000);
  EXPECT_EQ(l.current(), kReuse);
  EXPECT_FALSE(l.learning());
  const AutoLearner::Snapshot s = l.snapshot();
  EXPECT_EQ(s.source, DecisionSource::kLearned);
  EXPECT_EQ(s.decisions, 1u);
  EXPECT_EQ(s.switches, 1u);
  // Per call at the decision's bytes: the medians.
  EXPECT_DOUBLE_EQ(s.cost_ns[static_cast<int>(kReuse)], 1000.0);
  EXPECT_DOUBLE_EQ(s.cost_ns[static_cast<int>(kArena)], 2000.0);
  // Heap, 3x reuse, was dropped after min_calls; arena (2x) too; reuse, the
  // one candidate left, needs no more calls than theirs.
  EXPECT_EQ(s.first_decision_calls, static_cast<uint64_t>(trials));
  EXPECT_GE(trials, 3 * 6);
  EXPECT_LE(trials, 3 * 6 + 2);
}

// Two modes close to each other both get their full calls_per_mode.
TEST(AutoLearnerTest, CloseModesGetEveryCall) {
  AutoLearner l({.prior_min_bytes = 0});
  const int trials = Decide(l, {5.0, 1.1, 1.0}, 1000);
  EXPECT_EQ(l.current(), kReuse);
  EXPECT_GE(trials, 2 * 24 + 6);
}

// While it learns, calls do not keep running in a mode found clearly dearer:
// they move to the cheapest as soon as the running mode is dropped.
TEST(AutoLearnerTest, CallsLeaveADroppedModeAtOnce) {
  AutoLearner l({.prior_min_bytes = 0});
  ASSERT_EQ(l.current(), kArena);
  while (l.learning() && l.current() == kArena) {
    const std::optional<AllocationMode> mode = l.Trial(0);
    ASSERT_TRUE(mode.has_value());
    const double c = *mode == kReuse ? 1.0 : *mode == kArena ? 2.0 : 1.1;
    l.Observe(*mode, c * 1000, 1000, false, 0);
  }
  EXPECT_TRUE(l.learning());  // moved before the decision (heap still in it)
  EXPECT_NE(l.current(), kArena);  // to the cheapest measured then
  Decide(l, {1.1, 2.0, 1.0}, 1000);
  EXPECT_EQ(l.current(), kReuse);
  EXPECT_EQ(l.snapshot().switches, 1u);  // arena -> reuse, counted once
}

TEST(AutoLearnerTest, KeepsTheRunningModeWithinTheMargin) {
  AutoLearner l({.prior_min_bytes = 0});
  Decide(l, {5.0, 1.0, 0.98}, 1000);  // reuse 2 % cheaper: a tie
  EXPECT_EQ(l.current(), kArena);
  EXPECT_EQ(l.snapshot().switches, 0u);
}

TEST(AutoLearnerTest, MedianIgnoresAFewOutliers) {
  AutoLearner l({.prior_min_bytes = 0});
  int call = 0;
  // Every 6th call 20x slower (a page fault, a preemption): the mean would
  // pick wrongly in some draws, the median does not.
  Decide(l, {5.0, 1.0, 1.2}, 1000, 0,
         [&] { return ++call % 6 == 0 ? 20.0 : 1.0; });
  EXPECT_EQ(l.current(), kArena);
}

TEST(AutoLearnerTest, PicksTheCheaperUnderNoiseMostOfTheTime) {
  // Lognormal noise of 15 %: reuse 10 % cheaper than arena is found in about
  // 92 % of decisions; a tie leaves arena running in about 70 %. The bounds
  // are 4 standard deviations below that, over 1000 decisions.
  std::mt19937 rng(7);
  std::lognormal_distribution<double> noise(0, 0.15);
  int found = 0, kept = 0;
  for (int i = 0; i < 1000; ++i) {
    AutoLearner a({.prior_min_bytes = 0});
    Decide(a, {3.0, 1.0, 0.9}, 1000, 0, [&] { return noise(rng); });
    found += a.current() == kReuse;
    AutoLearner b({.prior_min_bytes = 0});
    Decide(b, {3.0, 1.0, 1.0}, 1000, 0, [&] { return noise(rng); });
    kept += b.current() == kArena;
  }
  EXPECT_GE(found, 885);
  EXPECT_GE(kept, 650);
}

TEST(AutoLearnerTest, PriorHoldsHeapOutOfLargeCalls) {
  AutoLearner l;  // prior on: 48 KiB
  int heap_trials = 0;
  while (auto mode = l.Trial(0)) {
    heap_trials += *mode == kHeap;
    if (l.Observe(*mode, (*mode == kReuse ? 1.0 : 2.0) * 100000, 100000, false,
                  0)) {
      break;
    }
  }
  EXPECT_EQ(heap_trials, 0);
  EXPECT_EQ(l.current(), kReuse);
  const AutoLearner::Snapshot s = l.snapshot();
  EXPECT_EQ(s.source, DecisionSource::kPrior);
  EXPECT_EQ(s.prior_decisions, 1u);
  EXPECT_EQ(s.cost_ns[static_cast<int>(kHeap)], 0);
}

TEST(AutoLearnerTest, RanNamesTheModesCallsRanIn) {
  AutoLearner l;  // prior on: heap held out of 100 KB calls
  Decide(l, {2.0, 2.0, 1.0}, 100000);
  EXPECT_EQ(l.current(), kReuse);
  EXPECT_FALSE(l.Ran(kHeap));
  EXPECT_TRUE(l.Ran(kArena));  // the mode it began in, and tried
  EXPECT_TRUE(l.Ran(kReuse));

  AutoLearner small;  // small calls: heap tried too
  Decide(small, {2.0, 2.0, 1.0}, 2000);
  EXPECT_TRUE(small.Ran(kHeap));

  // Loaded in heap, re-checked on large calls: heap held out but calls ran
  // in it until the re-check settled.
  AutoLearner loaded({.recheck_after_s = 1});
  loaded.Load(kHeap, 0);
  Decide(loaded, {2.0, 2.0, 1.0}, 100000, /*now_s=*/2);
  EXPECT_EQ(loaded.current(), kReuse);
  EXPECT_TRUE(loaded.Ran(kHeap));
}

TEST(AutoLearnerTest, PriorLetsHeapInForSmallCalls) {
  AutoLearner l;
  Decide(l, {0.5, 1.0, 1.0}, 2000);  // small calls where heap is cheapest
  EXPECT_EQ(l.current(), kHeap);
  EXPECT_EQ(l.snapshot().source, DecisionSource::kLearned);
}

TEST(AutoLearnerTest, PriorLetsHeapInForBulkBytes) {
  AutoLearner l;  // large calls, but under 0.5 ns a byte: heap is tried
  Decide(l, {0.2, 0.3, 0.3}, 1 << 20);
  EXPECT_EQ(l.current(), kHeap);
}

TEST(AutoLearnerTest, WarmingReuseCallsAreLeftOutUpToTheirLimit) {
  AutoLearner l({.prior_min_bytes = 0, .max_warming = 4});
  for (int i = 0; i < 6; ++i) {
    EXPECT_FALSE(l.Observe(kReuse, 1e6, 1000, /*warming=*/true, 0));
  }
  const AutoLearner::Snapshot s = l.snapshot();
  EXPECT_EQ(s.warming, 4u);
  EXPECT_EQ(s.observed, 2u);  // beyond the limit: measured as it is
}

// Each decision gets its own allowance of warming calls: a re-check starts
// with it fresh, under the same lock that starts the decision (a re-check
// started apart from that reset skipped it once).
TEST(AutoLearnerTest, ARecheckStartsWithFreshWarmingAllowance) {
  AutoLearner l({.recheck_after_s = 1, .prior_min_bytes = 0, .max_warming = 2});
  for (int i = 0; i < 3; ++i) l.Observe(kReuse, 1000, 1000, true, 0);
  EXPECT_EQ(l.snapshot().warming, 2u);
  Decide(l, {3.0, 2.0, 1.0}, 1000, 0);
  ASSERT_FALSE(l.learning());
  ASSERT_TRUE(l.Trial(2).has_value());  // the re-check starts here
  for (int i = 0; i < 3; ++i) l.Observe(kReuse, 1000, 1000, true, 2);
  EXPECT_EQ(l.snapshot().warming, 4u);
}

TEST(AutoLearnerTest, RechecksAfterItsTimeAndFollowsTheTraffic) {
  AutoLearner l({.recheck_after_s = 30, .prior_min_bytes = 0});
  Decide(l, {3.0, 1.0, 2.0}, 1000, /*now_s=*/10);
  EXPECT_EQ(l.current(), kArena);
  EXPECT_FALSE(l.Trial(39.9).has_value());
  // The traffic changed: reuse is now cheaper.
  Decide(l, {3.0, 2.0, 1.0}, 1000, /*now_s=*/40.1);
  EXPECT_EQ(l.current(), kReuse);
  EXPECT_EQ(l.snapshot().decisions, 2u);
}

TEST(AutoLearnerTest, ALoadedDecisionRunsAtOnceAndIsRechecked) {
  AutoLearner l({.recheck_after_s = 30, .prior_min_bytes = 0});
  l.Load(kReuse, 5);
  EXPECT_EQ(l.current(), kReuse);
  EXPECT_FALSE(l.Trial(6).has_value());
  EXPECT_EQ(l.snapshot().source, DecisionSource::kLoaded);
  EXPECT_TRUE(l.Trial(36).has_value());
}

// Paused, it runs the cheapest mode with min_calls timed calls (not the mode
// of its first trials) and tries again at the re-check.
TEST(AutoLearnerTest, PausedItRunsTheCheapestMeasuredModeUntilTheRecheck) {
  AutoLearner l({.min_calls = 6, .recheck_after_s = 30, .prior_min_bytes = 0});
  ASSERT_EQ(l.current(), kArena);
  for (int i = 0; i < 6; ++i) {
    l.Observe(kArena, 2000, 1000, false, 1);
    l.Observe(kReuse, 1000, 1000, false, 1);
    l.Observe(kHeap, 500, 1000, false, 1);
  }
  l.Observe(kHeap, 500, 1000, false, 1);
  l.Pause(2);
  EXPECT_EQ(l.current(), kHeap);
  EXPECT_FALSE(l.learning());
  EXPECT_FALSE(l.Trial(3).has_value());
  EXPECT_FALSE(l.Trial(31).has_value());
  EXPECT_TRUE(l.Trial(32).has_value());
  EXPECT_TRUE(l.learning());
}

TEST(AutoLearnerTest, PausedWithTooFewCallsItKeepsItsMode) {
  AutoLearner l({.min_calls = 6, .recheck_after_s = 30, .prior_min_bytes = 0});
  for (int i = 0; i < 5; ++i) l.Observe(kReuse, 1000, 1000, false, 1);
  l.Pause(2);
  EXPECT_EQ(l.current(), kArena);
  EXPECT_FALSE(l.Trial(3).has_value());
}

TEST(AutoLearnerTest, StaleTrialsAfterTheDecisionAreIgnored) {
  AutoLearner l({.recheck_after_s = 1000, .prior_min_bytes = 0});
  Decide(l, {3.0, 1.0, 2.0}, 1000);
  const uint64_t observed = l.snapshot().observed;
  EXPECT_FALSE(l.Observe(kHeap, 1, 1000, false, 1));
  EXPECT_EQ(l.snapshot().observed, observed);
}

TEST(AutoLearnerTest, ExcessShareIsWhatATrialWastes) {
  AutoLearner l({.prior_min_bytes = 0});
  EXPECT_EQ(l.ExcessShare(kHeap), 0);  // nothing known yet
  l.Observe(kHeap, 4000, 1000, false, 0);
  l.Observe(kArena, 1000, 1000, false, 0);
  EXPECT_DOUBLE_EQ(l.ExcessShare(kHeap), 0.75);
  EXPECT_DOUBLE_EQ(l.ExcessShare(kArena), 0);
  // Against the mode untimed calls run in (arena): a trial in it wastes
  // nothing even where another mode was measured cheaper.
  l.Observe(kReuse, 500, 1000, false, 0);
  ASSERT_EQ(l.current(), kArena);
  EXPECT_DOUBLE_EQ(l.ExcessShare(kArena), 0);
  EXPECT_DOUBLE_EQ(l.ExcessShare(kReuse), 0);
  EXPECT_DOUBLE_EQ(l.ExcessShare(kHeap), 0.75);
}

// Every member from many threads at once, as gRPC's threads call them.
TEST(AutoLearnerTest, ConcurrentCallsSettleOnce) {
  AutoLearner l({.recheck_after_s = 0.001, .prior_min_bytes = 0});
  std::vector<std::thread> threads;
  std::atomic<int> settled{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        const double now = i * 1e-4;
        if (auto mode = l.Trial(now)) {
          const double c = *mode == kReuse ? 1.0 : 2.0;
          settled += l.Observe(*mode, c * 1000, 1000, (i + t) % 50 == 0, now);
        }
        (void)l.ExcessShare(kArena);
        (void)l.snapshot();
        (void)l.current();
      }
    });
  }
  for (auto& th : threads) th.join();
  const AutoLearner::Snapshot s = l.snapshot();
  EXPECT_EQ(s.decisions, static_cast<uint64_t>(settled.load()));
  EXPECT_GE(s.decisions, 1u);
  EXPECT_EQ(s.mode, kReuse);
}

TEST(LearningBudgetTest, ShareOfTheProcessPlusACredit) {
  LearningBudget b;
  EXPECT_DOUBLE_EQ(b.share(), LearningBudget::kDefaultShare);
  b.set_share(0.05);  // the first install's, even above the default
  EXPECT_DOUBLE_EQ(b.share(), 0.05);
  b.set_share(0.02);
  b.set_share(0.04);  // then the smallest wins
  EXPECT_DOUBLE_EQ(b.share(), 0.02);
  EXPECT_TRUE(b.HasRoom(0));
  b.Spend(LearningBudget::kCreditNs);
  EXPECT_TRUE(b.HasRoom(0));
  b.Spend(1);
  EXPECT_FALSE(b.HasRoom(0));
  EXPECT_TRUE(b.HasRoom(100));  // 2 % of 100 ns
  b.Spend(-5);                  // nothing
  EXPECT_DOUBLE_EQ(b.spent_ns(), LearningBudget::kCreditNs + 1);
}

}  // namespace
}  // namespace arenarpc::internal
