#include "arenarpc/mode_chooser.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <random>
#include <utility>
#include <vector>

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

// kAuto's learner: costs with multiplicative (log-normal) noise `sigma`,
// only the modes it still measures.
ModeCosts Noisy(std::mt19937& rng, const std::array<double, 3>& cost,
                double sigma, unsigned mask = 7) {
  std::normal_distribution<double> z(0.0, sigma);
  ModeCosts c;
  c.ok = true;
  for (int m = 0; m < 3; ++m) {
    if (mask & (1u << m)) c.ns[m] = cost[m] * std::exp(z(rng));
  }
  return c;
}

// Feeds samples one per second until the learner settles; returns samples.
int SettleCount(AutoLearner& l, std::mt19937& rng,
                const std::array<double, 3>& cost, double sigma, double& t) {
  int n = 0;
  while (l.Wants(t) && n < 1000) {
    l.Observe(Noisy(rng, cost, sigma, l.measured_mask()), t);
    ++n;
    t += 1;
  }
  return n;
}

TEST(AutoLearnerTest, DropsAClearLoserEarlyAndSettlesFast) {
  std::mt19937 rng(5);
  AutoLearner l;
  EXPECT_EQ(l.current(), AllocationMode::kArena);
  // Heap 1.5x, reuse 0.6x arena, 5 % noise: a large batch message.
  std::array<double, 3> cost = {1500, 1000, 600};
  double t = 0;
  int heap_dropped_at = -1;
  int n = 0;
  while (l.Wants(t)) {
    l.Observe(Noisy(rng, cost, 0.05, l.measured_mask()), t);
    ++n;
    t += 1;
    if (heap_dropped_at < 0 && (l.measured_mask() & (1u << kHeap)) == 0) {
      heap_dropped_at = n;
    }
  }
  EXPECT_EQ(l.current(), AllocationMode::kReuse);
  EXPECT_GE(heap_dropped_at, 3);  // not before the first look
  EXPECT_LE(heap_dropped_at, 5);
  EXPECT_LE(n, 6);  // settled as soon as one mode is left
  const AutoLearner::Snapshot s = l.snapshot();
  EXPECT_TRUE(s.settled);
  EXPECT_EQ(s.decisions, 1u);
  EXPECT_EQ(s.dropped_modes, 2u);
  EXPECT_EQ(s.first_decision_samples, static_cast<uint64_t>(n));
  EXPECT_EQ(s.switches, 1u);
  EXPECT_FALSE(s.measured[kHeap]);
  // Settled: no samples wanted until the re-check.
  EXPECT_EQ(l.next_check_s(), s.first_decision_s + 30);
  EXPECT_FALSE(l.Wants(s.first_decision_s + 29.5));
  EXPECT_TRUE(l.Wants(s.first_decision_s + 30));
}

// Widely different modes: calls move to the clear leader from the first
// sample, long before the test settles.
TEST(AutoLearnerTest, RunsInAClearLeaderFromTheFirstSample) {
  std::mt19937 rng(10);
  AutoLearner l;
  l.Observe(Noisy(rng, {2500, 2400, 1100}, 0.05), 0);
  EXPECT_EQ(l.current(), AllocationMode::kReuse);
  EXPECT_TRUE(l.wants());  // still learning
  // Within the lead (25 %), it stays where it is.
  AutoLearner close;
  close.Observe(Noisy(rng, {1000, 1000, 900}, 0.01), 0);
  EXPECT_EQ(close.current(), AllocationMode::kArena);
}

TEST(AutoLearnerTest, TiesSettleWithinMaxSamplesOnTheCurrentMode) {
  std::mt19937 rng(6);
  AutoLearner l;
  double t = 0;
  const int n = SettleCount(l, rng, {1000, 1000, 1000}, 0.10, t);
  EXPECT_LE(n, AutoLearnerOptions().max_samples);
  EXPECT_EQ(l.current(), AllocationMode::kArena);
  EXPECT_EQ(l.snapshot().switches, 0u);
}

// Decisions on three modes of equal cost at 5, 10 and 30 % noise, settled
// by `settle`; returns {decisions that dropped a mode, decisions}.
template <class Settle>
std::pair<int, int> WrongDrops(int decisions, Settle settle) {
  int wrong = 0;
  int n = 0;
  for (double sigma : {0.05, 0.1, 0.3}) {
    for (int i = 0; i < decisions / 3; ++i, ++n) {
      AutoLearner l;
      double t = 0;
      settle(l, sigma, t);
      if (l.snapshot().dropped_modes > 0) ++wrong;
    }
  }
  return {wrong, n};
}

// The stated error rate: a mode as cheap as another must not be dropped.
// 2000 decisions on three modes of equal cost, 5-30 % noise: a drop is an
// error. Bound: 0.01 % per test, 6 tests (ordered pairs) per look, 22
// looks: 1.3 % of decisions; measured here 25 of 1998.
TEST(AutoLearnerTest, RarelyDropsAModeThatIsNotWorse) {
  std::mt19937 rng(7);
  const auto [wrong, decisions] =
      WrongDrops(2000, [&](AutoLearner& l, double sigma, double& t) {
        SettleCount(l, rng, {1000, 1000, 1000}, sigma, t);
      });
  EXPECT_LE(wrong, decisions * 13 / 1000) << wrong << " of " << decisions;
}

TEST(AutoLearnerTest, ReChecksAfterAShiftAndFollows) {
  std::mt19937 rng(8);
  AutoLearnerOptions o;
  o.recheck_after_s = 30;
  AutoLearner l(o);
  double t = 0;
  SettleCount(l, rng, {1500, 1000, 600}, 0.05, t);
  ASSERT_EQ(l.current(), AllocationMode::kReuse);
  const double settled_at = t;
  // The traffic changes: reuse now loses to arena. Settled, auto samples
  // nothing until the re-check is due.
  const std::array<double, 3> shifted = {1500, 800, 1200};
  for (; t < settled_at + 29; t += 1) EXPECT_FALSE(l.Wants(t));
  EXPECT_EQ(l.current(), AllocationMode::kReuse);
  for (; !l.Wants(t); t += 1) {
  }
  EXPECT_LE(t - settled_at, 30);
  // One sample a second: followed within the re-check plus a few samples.
  const int n = SettleCount(l, rng, shifted, 0.05, t);
  EXPECT_EQ(l.current(), AllocationMode::kArena);
  EXPECT_LE(n, 8);
  EXPECT_LE(t - settled_at, 30 + 8);
  EXPECT_EQ(l.snapshot().decisions, 2u);
  // A re-check that finds nothing new keeps the mode.
  for (; !l.Wants(t); t += 1) {
  }
  SettleCount(l, rng, shifted, 0.05, t);
  EXPECT_EQ(l.current(), AllocationMode::kArena);
  EXPECT_EQ(l.snapshot().decisions, 3u);
}

TEST(AutoLearnerTest, IgnoresFailedSamples) {
  AutoLearner l;
  ModeCosts bad;
  for (int i = 0; i < 100; ++i) l.Observe(bad, i);
  EXPECT_EQ(l.snapshot().samples, 0u);
  EXPECT_TRUE(l.Wants(100));
}

// Real calls (kRealCalls): one call at a time in the mode NextTrialMode()
// gives, of `bytes` on the wire (a random size of the mix if 0), costing
// cost[mode] ns per byte with log-normal noise `sigma`. Returns calls.
int SettleOnCalls(AutoLearner& l, std::mt19937& rng,
                  const std::array<double, 3>& per_byte, double sigma,
                  double& t, double bytes = 0) {
  std::normal_distribution<double> z(0.0, sigma);
  // The corpus's mix: typical, large and huge requests.
  std::discrete_distribution<int> size_class({70, 25, 5});
  constexpr double kSizes[] = {50e3, 300e3, 1e6};
  int n = 0;
  while (l.Wants(t) && n < 10000) {
    const AllocationMode m = l.NextTrialMode();
    const double b = bytes > 0 ? bytes : kSizes[size_class(rng)];
    l.ObserveCall(m, per_byte[static_cast<int>(m)] * b * std::exp(z(rng)), b,
                  t);
    ++n;
    t += 0.02;  // 50 calls/s
  }
  return n;
}

TEST(AutoLearnerRealCallsTest, TriesModesInTurnDropsALoserAndSettles) {
  std::mt19937 rng(11);
  AutoLearner l;
  // The turn: every measured mode once per round.
  std::array<int, 3> turns = {};
  for (int i = 0; i < 6; ++i) ++turns[static_cast<int>(l.NextTrialMode())];
  EXPECT_EQ(turns, (std::array<int, 3>{2, 2, 2}));
  // Heap 1.5x, reuse 0.6x arena per byte, 10 % noise, mixed sizes.
  double t = 0;
  const int n = SettleOnCalls(l, rng, {15, 10, 6}, 0.10, t);
  EXPECT_EQ(l.current(), AllocationMode::kReuse);
  const AutoLearner::Snapshot s = l.snapshot();
  EXPECT_TRUE(s.settled);
  EXPECT_EQ(s.dropped_modes, 2u);
  // Settled on one mode left, well before max_calls_per_mode rounds: under
  // 2 s of traffic at 50 calls/s.
  EXPECT_LE(n, 30);
  EXPECT_EQ(s.samples, static_cast<uint64_t>(n));
  // The excess a call in a dropped mode was charged: reuse is cheapest.
  EXPECT_EQ(l.excess_share(AllocationMode::kReuse), 0);
  EXPECT_NEAR(l.excess_share(AllocationMode::kHeap), 1 - 6.0 / 15, 0.1);
  // Settled: only the current mode.
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(l.NextTrialMode(), AllocationMode::kReuse);
  }
}

// A real call is one noisy, unpaired sample: calls move to a leader only
// once it and the running mode have min_samples calls each.
TEST(AutoLearnerRealCallsTest, LeadsOnlyOnMinSamplesCallsOfEach) {
  AutoLearner l;
  double t = 0;
  const auto call = [&](AllocationMode m, double ns) {
    l.ObserveCall(m, ns, 1000, t);
    t += 0.02;
  };
  ASSERT_GE(AutoLearnerOptions().min_samples, 2);
  call(AllocationMode::kArena, 1000);
  call(AllocationMode::kReuse, 600);  // 40 % cheaper: one call says little
  EXPECT_EQ(l.current(), AllocationMode::kArena);
  for (int i = 1; i < AutoLearnerOptions().min_samples; ++i) {
    EXPECT_EQ(l.current(), AllocationMode::kArena) << i;
    call(AllocationMode::kArena, 1000);
    call(AllocationMode::kReuse, 600);
  }
  EXPECT_EQ(l.current(), AllocationMode::kReuse);
  EXPECT_EQ(l.snapshot().switches, 1u);
}

// Calls of very different sizes, same cost per byte in every mode: a tie,
// not a loser (the test compares cost per byte, not per call).
TEST(AutoLearnerRealCallsTest, ComparesCostPerWireByte) {
  std::mt19937 rng(12);
  AutoLearner l;
  double t = 0;
  std::normal_distribution<double> z(0.0, 0.05);
  int n = 0;
  while (l.Wants(t) && n < 1000) {
    const AllocationMode m = l.NextTrialMode();
    // Heap's calls happen to be the large ones.
    const double b = m == AllocationMode::kHeap ? 1e6 : 20e3;
    l.ObserveCall(m, 10 * b * std::exp(z(rng)), b, t);
    ++n;
    t += 0.02;
  }
  EXPECT_EQ(l.snapshot().dropped_modes, 0u);
  EXPECT_EQ(l.current(), AllocationMode::kArena);
  EXPECT_LE(n, 3 * AutoLearnerOptions().max_calls_per_mode);
}

// The stated error rate of the unpaired test: 1.8 % (0.01 % per test, 6
// tests a look, 30 looks); ties of 5-30 % noise, mixed sizes.
TEST(AutoLearnerRealCallsTest, RarelyDropsAModeThatIsNotWorse) {
  std::mt19937 rng(13);
  const auto [wrong, decisions] =
      WrongDrops(1500, [&](AutoLearner& l, double sigma, double& t) {
        SettleOnCalls(l, rng, {10, 10, 10}, sigma, t);
      });
  std::printf("real calls: %d of %d decisions dropped a mode wrongly\n", wrong,
              decisions);
  EXPECT_LE(wrong, decisions * 18 / 1000) << wrong << " of " << decisions;
}

TEST(AutoLearnerRealCallsTest, ReChecksAfterAShiftAndFollows) {
  std::mt19937 rng(14);
  AutoLearner l;
  double t = 0;
  SettleOnCalls(l, rng, {15, 10, 6}, 0.05, t);
  ASSERT_EQ(l.current(), AllocationMode::kReuse);
  const double settled_at = t;
  // A call that was in flight in a dropped mode is ignored once settled.
  l.ObserveCall(AllocationMode::kHeap, 1, 1e6, t);
  EXPECT_EQ(l.current(), AllocationMode::kReuse);
  EXPECT_FALSE(l.Wants(settled_at + 29));
  t = settled_at + 30;
  // Reuse now loses to arena: followed within the re-check and a decision.
  const int n = SettleOnCalls(l, rng, {15, 8, 12}, 0.05, t);
  EXPECT_EQ(l.current(), AllocationMode::kArena);
  EXPECT_LE(n, 30);
  EXPECT_EQ(l.snapshot().decisions, 2u);
}

// Real-call learning against a simulated server (injected costs and
// clock). By default a large-message server as the sync corpus measured it
// (Cortex remote write, 847 KB requests at 20 calls/s; per-call thread CPU
// in steady state: heap 3.6 ms, arena 1.9, reuse 1.3; each call also costs
// gRPC 0.5 ms outside the timed window). As MethodMeter admits and bills
// them: a call is timed when the learner wants one and its mode's excess
// share times what timed calls cost lately fits the budget; it is billed
// its CPU times its mode's excess share (known after it) plus its clock
// reads. Noise, log-normal: `running` for a call in the mode calls run in,
// `switched` for a call in another mode (auto's trials vary far more than
// a fixed mode's calls, and not alike: on OTLP traces, calls in the
// running mode 0.11, switched ones 0.14-0.25; on Cortex, reuse's running
// calls 2.0-3.6 ms against 1.23-1.40 ms, p10-p90, for fixed reuse).
struct Sim {
  std::array<double, 3> cost = {3.6e6, 1.9e6, 1.3e6};
  double running = 0.05;
  double switched = 0.3;
  double share = LearningBudget::kDefaultShare;
  double calls_per_s = 20;
  double grpc_ns = 0.5e6;
  double bytes = 847e3;
  double seconds = 60;
  bool stop_at_settle = false;
  AutoLearnerOptions learner;  // the prior off, as before it
};
struct SimRun {
  double settled_s = -1;   // -1: not within the run
  double spent_share = 0;  // learning's cost / the process's CPU
  // The largest of spent - (share * process + credit + the last bill),
  // over every call: the budget's guarantee holds while it is <= 0.
  double worst_overshoot_ns = -1e300;
  int timed = 0;
  AllocationMode chose = AllocationMode::kArena;
  uint64_t dropped = 0;
  std::array<int, 3> trials = {};  // timed calls per mode
  DecisionSource source = DecisionSource::kNone;
};

SimRun Simulate(uint32_t seed, const Sim& sim) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  constexpr double kClockNs = 2000;
  LearningBudget budget(sim.share);
  AutoLearner l(sim.learner);
  SimRun r;
  double process = 0;
  double call_ns = 0;
  double last = 0;
  for (int call = 0; call < sim.seconds * sim.calls_per_s; ++call) {
    const double now = call / sim.calls_per_s;
    AllocationMode m = l.current();
    bool timed = false;
    if (l.Wants(now)) {
      const AllocationMode trial = l.NextTrialMode();
      timed = budget.Fits(process, l.excess_share(trial) * call_ns);
      if (timed) {
        m = trial;
      } else {
        l.CancelTrial(trial);
      }
    }
    const double sigma = m == l.current() ? sim.running : sim.switched;
    const double ns = sim.cost[static_cast<int>(m)] * std::exp(sigma * z(rng));
    process += ns + sim.grpc_ns;
    if (timed) {
      ++r.timed;
      ++r.trials[static_cast<int>(m)];
      l.ObserveCall(m, ns, sim.bytes, now);
      call_ns = call_ns <= 0 ? ns : call_ns + 0.25 * (ns - call_ns);
      last = l.excess_share(m) * ns + kClockNs;
      budget.Spend(last);
      if (r.settled_s < 0 && !l.wants()) {
        r.settled_s = now;
        if (sim.stop_at_settle) break;
      }
    }
    r.worst_overshoot_ns = std::max(
        r.worst_overshoot_ns,
        budget.spent_ns() -
            (sim.share * process + LearningBudget::kDefaultCreditNs + last));
  }
  r.spent_share = budget.spent_ns() / process;
  r.chose = l.current();
  r.dropped = l.snapshot().dropped_modes;
  r.source = l.snapshot().source;
  return r;
}

// 1 MB calls of 5 ms on arena at 50 calls/s, heap 1.5x and reuse 0.6x,
// 5 % noise, all of a call's CPU in the timed window.
TEST(LearningBudgetTest, RealCallsChargeTheExcessAndStayWithinTheShare) {
  for (double share : {0.02, 0.005}) {
    Sim sim;
    sim.cost = {7.5e6, 5e6, 3e6};
    sim.running = sim.switched = 0.05;
    sim.share = share;
    sim.calls_per_s = 50;
    sim.grpc_ns = 0;
    sim.bytes = 1e6;
    const SimRun r = Simulate(15, sim);
    EXPECT_LE(r.worst_overshoot_ns, 0) << share;
    EXPECT_EQ(r.chose, AllocationMode::kReuse) << share;
    EXPECT_GT(r.settled_s, 0) << share;
    // Settling is paced by the budget: the dear modes' excess (here about
    // 25 ms of CPU in all) against share * 250 ms of CPU a second, after a
    // 5 ms credit: about 4 s at 2 %, 20 s at 0.5 %.
    EXPECT_LE(r.settled_s, share == 0.02 ? 8 : 40) << share << ": " << r.timed;
  }
}

// The budget against a simulated server, injected clock and costs: calls
// of 1 MB at 50 calls/s, 5 ms of CPU each; a learning sample costs two
// parses per measured mode (2 ms each) plus serializing (1 ms). Admission
// as the measuring thread does it: one sample when the learner wants one
// and Fits() says so.
struct Simulated {
  double call_ns = 5e6;
  double parse_ns = 2e6;
  double serialize_ns = 1e6;
  double calls_per_s = 50;
};

TEST(LearningBudgetTest, NeverExceededAndStillConverges) {
  for (double share : {0.02, 0.05, 0.005}) {
    std::mt19937 rng(9);
    Simulated sim;
    LearningBudget budget(share);
    AutoLearner l;
    double process = 0;
    double spent_last = 0;
    int samples = 0;
    double settled_s = -1;
    for (int call = 0; call < 200 * 50; ++call) {
      const double now = call / sim.calls_per_s;
      process += sim.call_ns;
      if (l.Wants(now) && budget.Fits(process, budget.expected_ns())) {
        const unsigned mask = l.measured_mask();
        const double cost =
            sim.serialize_ns + 2 * sim.parse_ns * __builtin_popcount(mask);
        budget.Spend(cost);
        budget.LearnSampleCost(cost);
        process += cost;  // learning is process CPU too
        spent_last = cost;
        ++samples;
        l.Observe(Noisy(rng, {1500, 1000, 600}, 0.05, mask), now);
        if (settled_s < 0 && !l.wants()) settled_s = now;
      }
      // The guarantee, at every call.
      ASSERT_LE(budget.spent_ns(),
                share * process + LearningBudget::kDefaultCreditNs + spent_last)
          << share << " at call " << call;
    }
    EXPECT_EQ(l.current(), AllocationMode::kReuse) << share;
    // Settling takes about samples * cost / (share * CPU per second).
    EXPECT_GT(settled_s, 0) << share;
    const double per_s = share * sim.call_ns * sim.calls_per_s;
    EXPECT_LE(settled_s, 6 * 13e6 / per_s + 1) << share;
    // Over the run: re-checks included, within the share (+ credit).
    EXPECT_LE(budget.spent_ns(),
              share * process + LearningBudget::kDefaultCreditNs)
        << share;
  }
}

TEST(LearningBudgetTest, ZeroShareTakesOnlyTheCredit) {
  LearningBudget budget(0.0);
  EXPECT_TRUE(budget.Fits(0, 1e6));
  budget.Spend(5e6);
  EXPECT_FALSE(budget.Fits(1e12, 1));
  EXPECT_EQ(budget.spent_ns(), 5e6);
}

// What settling costs in time on Cortex's shape at 20 calls/s: heap's and
// arena's trials each wait for the 2 % budget, and the test needs three
// calls of each. Median over 40 seeds 12.1 s (seen; p10 5.6, p90 19.6);
// every run on reuse, learning within the share.
TEST(AutoLearnerLargeTest, SettlesALargeMethodWithinTheBudget) {
  std::vector<double> settle;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    const SimRun r = Simulate(seed, Sim());
    EXPECT_EQ(r.chose, AllocationMode::kReuse) << seed;
    EXPECT_LE(r.worst_overshoot_ns, 0) << seed;  // at every call
    // The process spends at least 1.8 ms a call (reuse's 1.3 + gRPC's).
    EXPECT_LE(r.spent_share,
              LearningBudget::kDefaultShare +
                  LearningBudget::kDefaultCreditNs / (60 * 20 * 1.8e6))
        << seed;
    settle.push_back(r.settled_s < 0 ? 999 : r.settled_s);
  }
  std::sort(settle.begin(), settle.end());
  std::printf("median settle %.1f s (p10 %.1f, p90 %.1f)\n", settle[20],
              settle[4], settle[36]);
  EXPECT_LT(settle[36], 30);  // 9 in 10 before the first re-check is due
}

// The stated error rate (1.8 %) where noise is not alike across modes:
// three modes of equal cost under the budget, the first decision of each
// run, trials in a mode calls do not run in 6x noisier than calls in the
// running mode; a drop is an error. Seen: 11 of 900. (Free trials in the
// cheapest mode while a dear one waits for the budget settle such a
// method in a third of the time, but the pooled variance they feed is the
// running mode's, and 4-16 % of these decisions dropped a mode wrongly:
// not built.)
TEST(AutoLearnerLargeTest, RarelyDropsAModeThatIsNotWorseUnderUnevenNoise) {
  int wrong = 0;
  int decisions = 0;
  for (double running : {0.05, 0.1}) {
    for (uint32_t seed = 1; seed <= 450; ++seed, ++decisions) {
      Sim sim;
      sim.cost = {1.3e6, 1.3e6, 1.3e6};
      sim.running = running;
      sim.switched = 6 * running;
      sim.stop_at_settle = true;
      if (Simulate(1000 + seed, sim).dropped > 0) ++wrong;
    }
  }
  std::printf("uneven noise: %d of %d decisions dropped a mode wrongly\n",
              wrong, decisions);
  EXPECT_LE(wrong, decisions * 18 / 1000) << wrong << " of " << decisions;
}

// The prior (ServerOptions::automatic.prior, on by default): Cortex's
// shape (847 KB, heap 2.8x reuse) settles on reuse without a single heap
// trial: over 40 seeds a median 1.75 s of traffic (p10 0.45, p90 7.25,
// worst 9.70; docs/raw/auto_prior/mode_chooser_test.txt) where the same
// runs without the prior take a median 12.1 s (p90 19.6, above); arena's
// trials are what is left to pay for. Seen red with StartDecision's
// `state_.prior_held_out = PriorHoldsHeap()` set to false (heap measured).
TEST(AutoLearnerPriorTest, CortexShapeSettlesWithoutHeapInSeconds) {
  std::vector<double> settle;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    Sim sim;
    sim.learner.prior_min_bytes = 48 << 10;
    const SimRun r = Simulate(seed, sim);
    EXPECT_EQ(r.chose, AllocationMode::kReuse) << seed;
    EXPECT_EQ(r.trials[kHeap], 0) << seed;
    EXPECT_EQ(r.source, DecisionSource::kPrior) << seed;
    EXPECT_LE(r.worst_overshoot_ns, 0) << seed;
    EXPECT_GT(r.settled_s, 0) << seed;
    settle.push_back(r.settled_s < 0 ? 999 : r.settled_s);
  }
  std::sort(settle.begin(), settle.end());
  std::printf("prior: median settle %.2f s (p10 %.2f, p90 %.2f, worst %.2f)\n",
              settle[20], settle[4], settle[36], settle.back());
  EXPECT_LT(settle[20], 3);
  EXPECT_LT(settle[36], 8);
  EXPECT_LT(settle.back(), 18);
}

// A small method (20 KB calls) measures all three modes under the prior:
// heap is taken back in on its first timed call and, cheapest here, chosen.
// Seen red without ObserveCall's `if (state_.prior_held_out &&
// !PriorHoldsHeap()) ReleaseHeap();` (heap never tried: arena chosen).
TEST(AutoLearnerPriorTest, SmallMethodStillMeasuresEveryMode) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    Sim sim;
    sim.learner.prior_min_bytes = 48 << 10;
    sim.cost = {30e3, 40e3, 45e3};  // heap cheapest, as on small messages
    sim.bytes = 20e3;
    sim.grpc_ns = 20e3;
    sim.calls_per_s = 500;
    sim.stop_at_settle = true;  // the first decision (a re-check sizes it)
    const SimRun r = Simulate(seed, sim);
    EXPECT_GE(r.trials[kHeap], AutoLearnerOptions().min_samples) << seed;
    EXPECT_EQ(r.chose, AllocationMode::kHeap) << seed;
    EXPECT_EQ(r.source, DecisionSource::kLearned) << seed;
  }
}

// The evidence that takes heap back in on a large method: calls cheap per
// byte (1 MB of bulk bytes at 0.2 ns a byte in arena) are not made of many
// small objects, and heap, 20 % cheaper here, is measured and chosen.
// Seen red with the look's `best < std::log(prior_heap_ns_per_byte)` made
// false (heap never measured: arena chosen).
TEST(AutoLearnerPriorTest, CheapBytesTakeHeapBackIn) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    Sim sim;
    sim.learner.prior_min_bytes = 48 << 10;
    sim.bytes = 1e6;
    sim.cost = {0.16e6, 0.2e6, 0.22e6};
    sim.grpc_ns = 0.1e6;
    sim.calls_per_s = 200;
    const SimRun r = Simulate(seed, sim);
    EXPECT_EQ(r.chose, AllocationMode::kHeap) << seed;
    EXPECT_GE(r.trials[kHeap], AutoLearnerOptions().min_samples) << seed;
  }
}

// A decision from a decisions file: settled at once in its mode, no trial,
// re-checked recheck_after_s later like a learned one (then learned again,
// here with the prior). Seen red with Load()'s `next_check_s_ = now_s +
// options_.recheck_after_s` set to now_s (re-checked at once).
TEST(AutoLearnerPriorTest, LoadedDecisionRunsAtOnceAndOnlyReChecks) {
  AutoLearnerOptions o;
  o.prior_min_bytes = 48 << 10;
  AutoLearner l(o);
  ASSERT_TRUE(l.Load(AllocationMode::kReuse, {3.6e6, 1.9e6, 1.3e6}, 100));
  EXPECT_EQ(l.current(), AllocationMode::kReuse);
  EXPECT_FALSE(l.wants());
  EXPECT_FALSE(l.Wants(129));
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(l.NextTrialMode(), AllocationMode::kReuse);  // no trial
  }
  AutoLearner::Snapshot s = l.snapshot();
  EXPECT_EQ(s.source, DecisionSource::kLoaded);
  EXPECT_TRUE(s.settled);
  EXPECT_EQ(s.cost_ns[kReuse], 1.3e6);
  // A second load is refused: one decision is running.
  EXPECT_FALSE(l.Load(AllocationMode::kArena, {}, 101));
  // The re-check: learned again, heap held out (large calls).
  std::mt19937 rng(21);
  std::normal_distribution<double> z(0.0, 0.05);
  double t = 130;
  int n = 0;
  while (l.Wants(t) && n < 1000) {
    const AllocationMode m = l.NextTrialMode();
    EXPECT_NE(m, AllocationMode::kHeap);
    const std::array<double, 3> cost = {3.6e6, 1.9e6, 1.3e6};
    l.ObserveCall(m, cost[static_cast<int>(m)] * std::exp(z(rng)), 847e3, t);
    ++n;
    t += 0.05;
  }
  s = l.snapshot();
  EXPECT_EQ(l.current(), AllocationMode::kReuse);
  EXPECT_EQ(s.source, DecisionSource::kPrior);
  EXPECT_EQ(s.decisions, 1u);
  EXPECT_FALSE(l.Load(AllocationMode::kArena, {}, t));  // learned already
}

}  // namespace
}  // namespace arenarpc
