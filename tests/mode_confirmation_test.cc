// kAuto's confirmation of a close decision by the process's CPU
// (src/internal/mode_confirmation.h), against a simulated server: injected
// clock and process CPU, no time passes.
#include "src/internal/mode_confirmation.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>
#include <string>

#include "arenarpc/mode_chooser.h"

namespace arenarpc::internal {
namespace {

constexpr AllocationMode kArena = AllocationMode::kArena;
constexpr AllocationMode kReuse = AllocationMode::kReuse;

// The process: its CPU, and kAuto's budget if any (none: always room).
struct FakeProcess : ConfirmationEnv {
  double cpu_ns = 0;
  LearningBudget* budget = nullptr;
  double ProcessCpuNs() override { return cpu_ns; }
  bool BudgetFits(double expected_ns) override {
    return budget == nullptr || budget->Fits(cpu_ns, expected_ns);
  }
};

// One method's calls at `rate` calls/s of `bytes`, each costing the process
// per_byte[mode] ns per byte, times log-normal noise `sigma`, times a drift
// of the machine (1 + drift_per_s * t).
struct Server {
  std::mt19937 rng;
  std::array<double, kNumAllocationModes> per_byte = {12, 8, 8};
  double sigma = 0.15;
  double rate = 80;
  double bytes = 75e3;
  double drift_per_s = 0;
  double t = 0;
  uint64_t calls = 0;

  explicit Server(unsigned seed) : rng(seed) {}

  ConfirmationStep Call(ModeConfirmation& c, FakeProcess& p) {
    const ConfirmationStep step = c.OnCall(bytes, t, p);
    if (p.budget != nullptr) p.budget->Spend(step.bill_ns);
    Run(step.mode, p);
    return step;
  }
  // A call of `mode` runs: the process's CPU grows.
  void Run(AllocationMode mode, FakeProcess& p) {
    std::normal_distribution<double> z(0.0, sigma);
    p.cpu_ns += per_byte[static_cast<int>(mode)] * bytes * std::exp(z(rng)) *
                (1 + drift_per_s * t);
    t += 1 / rate;
    ++calls;
  }
  // Calls until the confirmation ends; its verdict.
  AllocationMode Confirm(ModeConfirmation& c, FakeProcess& p,
                         int max_calls = 100000) {
    for (int i = 0; i < max_calls; ++i) {
      const ConfirmationStep s = Call(c, p);
      if (s.verdict.has_value()) return *s.verdict;
    }
    ADD_FAILURE() << "no verdict in " << max_calls << " calls";
    return AllocationMode::kHeap;
  }
};

// The learner picked reuse, the process spends 5 % less with arena: taken.
TEST(ModeConfirmationTest, TakesTheRivalWhenTheProcessSaysItIsCheaper) {
  int switched = 0;
  constexpr int kRuns = 50;
  for (int seed = 0; seed < kRuns; ++seed) {
    ConfirmationSlot slot;
    ModeConfirmation c({}, &slot);
    FakeProcess p;
    Server s(seed);
    s.per_byte = {12, 8.0, 8.4};  // arena 5 % cheaper than reuse
    s.sigma = 0.1;
    c.Request(kReuse, kArena);
    ASSERT_TRUE(c.engaged());
    if (s.Confirm(c, p) == kArena) ++switched;
    EXPECT_FALSE(c.engaged());
    const ModeConfirmation::Stats st = c.stats();
    EXPECT_EQ(st.finished, 1u);
    EXPECT_EQ(st.last_pairs, ModeConfirmationOptions().pairs);
    // 16 epochs of 20 calls (0.25 s at 80 calls/s): about 4 s.
    EXPECT_LE(s.t, 4.5);
  }
  std::printf("arena 5 %% cheaper: taken in %d of %d confirmations\n", switched,
              kRuns);
  EXPECT_GE(switched, kRuns * 85 / 100) << switched << " of " << kRuns;
}

// The calls run in A B B A A B B A ... epochs of at least epoch_calls calls
// and epoch_s seconds.
TEST(ModeConfirmationTest, RunsEpochsInAbbaOrder) {
  ConfirmationSlot slot;
  ModeConfirmationOptions o;
  o.pairs = 4;
  o.epoch_calls = 10;
  o.epoch_s = 0;
  ModeConfirmation c(o, &slot);
  FakeProcess p;
  Server s(1);
  c.Request(kReuse, kArena);
  std::string order;
  for (int i = 0; i < 80; ++i) {
    const ConfirmationStep step = s.Call(c, p);
    if (i % 10 == 0) order += step.mode == kReuse ? 'A' : 'B';
    if (step.verdict.has_value()) break;
  }
  EXPECT_EQ(order, "ABBAABBA");
}

// The modes tie (or the pick is cheaper): the pick stays, but for the
// stated error rate (5 %) on ties.
TEST(ModeConfirmationTest, KeepsThePickWhenInconclusive) {
  int switched = 0;
  constexpr int kRuns = 400;
  for (int seed = 0; seed < kRuns; ++seed) {
    ConfirmationSlot slot;
    ModeConfirmation c({}, &slot);
    FakeProcess p;
    Server s(1000 + seed);
    s.per_byte = {12, 8, 8};
    c.Request(kReuse, kArena);
    if (s.Confirm(c, p) == kArena) ++switched;
  }
  std::printf("ties: the rival taken in %d of %d confirmations\n", switched,
              kRuns);
  EXPECT_LE(switched, kRuns * 7 / 100) << switched << " of " << kRuns;
  // The pick 5 % cheaper: kept.
  for (int seed = 0; seed < 20; ++seed) {
    ConfirmationSlot slot;
    ModeConfirmation c({}, &slot);
    FakeProcess p;
    Server s(2000 + seed);
    s.per_byte = {12, 8.4, 8.0};
    c.Request(kReuse, kArena);
    EXPECT_EQ(s.Confirm(c, p), kReuse);
  }
}

// A machine getting slower while a tie is confirmed: the ABBA order
// cancels the drift (A B, A B, ... would blame it on B).
TEST(ModeConfirmationTest, DriftCancels) {
  int switched = 0;
  for (int seed = 0; seed < 20; ++seed) {
    ConfirmationSlot slot;
    ModeConfirmation c({}, &slot);
    FakeProcess p;
    Server s(3000 + seed);
    s.per_byte = {12, 8, 8};
    s.sigma = 0.02;
    s.drift_per_s = -0.04;  // 4 % less CPU per call every second
    c.Request(kReuse, kArena);
    if (s.Confirm(c, p) == kArena) ++switched;
    EXPECT_LT(std::abs(c.stats().last_mean), 0.01);
  }
  EXPECT_LE(switched, 2);
}

// Two methods ask at once: one confirms, the other's calls run in its pick
// until the first is done, then it confirms.
TEST(ModeConfirmationTest, NeverRunsTwoMethodsAtOnce) {
  ConfirmationSlot slot;
  ModeConfirmation first({}, &slot);
  ModeConfirmation second({}, &slot);
  FakeProcess p;
  Server s(5);
  s.per_byte = {12, 8.0, 8.4};
  first.Request(kReuse, kArena);
  second.Request(kArena, kReuse);
  int first_done = 0;
  int second_done = 0;
  for (int i = 0; i < 4000 && second_done == 0; ++i) {
    const ConfirmationStep a = s.Call(first, p);
    if (a.verdict.has_value()) first_done = i;
    const ConfirmationStep b = s.Call(second, p);
    if (b.verdict.has_value()) second_done = i;
    ASSERT_FALSE(a.running && b.running) << "call " << i;
    if (first_done == 0) {
      // The second waits: its calls run in its pick.
      ASSERT_FALSE(b.running) << "call " << i;
      EXPECT_EQ(b.mode, kArena);
      EXPECT_TRUE(second.engaged());
    }
  }
  EXPECT_GT(first_done, 0);
  EXPECT_GT(second_done, first_done);
  EXPECT_EQ(first.stats().finished, 1u);
  EXPECT_EQ(second.stats().finished, 1u);
  EXPECT_EQ(slot.owner(), nullptr);
}

// What confirming spends stays within kAuto's budget (plus the pair in
// flight), and the confirmation still ends: it pauses between pairs.
TEST(ModeConfirmationTest, StaysWithinTheBudget) {
  ConfirmationSlot slot;
  ModeConfirmation c({}, &slot);
  LearningBudget budget(0.02, /*credit_ns=*/1e6);
  FakeProcess p;
  p.budget = &budget;
  Server s(7);
  s.per_byte = {12, 8, 10};  // reuse 25 % dearer: a dear confirmation
  s.sigma = 0.05;
  c.Request(kReuse, kArena);
  double largest_bill = 0;
  bool done = false;
  for (int i = 0; i < 200000 && !done; ++i) {
    const ConfirmationStep step = s.Call(c, p);
    largest_bill = std::max(largest_bill, step.bill_ns);
    ASSERT_LE(budget.spent_ns(), 0.02 * p.cpu_ns + 1e6 + largest_bill)
        << "call " << i;
    if (step.verdict.has_value()) {
      EXPECT_EQ(*step.verdict, kArena);
      done = true;
    }
  }
  EXPECT_TRUE(done);
  const ModeConfirmation::Stats st = c.stats();
  EXPECT_GT(st.pauses, 0u);  // the budget held it back
  EXPECT_NEAR(st.billed_ns, budget.spent_ns(), 16);
  // Billed: the reuse epochs' excess, about 20 % of their CPU.
  EXPECT_GT(st.billed_ns, 0);
}

// The method's calls stop for a while: the epoch spanning the gap is
// thrown away with its pair.
TEST(ModeConfirmationTest, DiscardsAPairSpanningIdleTime) {
  ConfirmationSlot slot;
  ModeConfirmation c({}, &slot);
  FakeProcess p;
  Server s(9);
  c.Request(kReuse, kArena);
  for (int i = 0; i < 30; ++i) s.Call(c, p);
  s.t += 60;                           // a minute without calls
  p.cpu_ns += 1e9;                     // while the process did other things
  EXPECT_EQ(s.Confirm(c, p), kReuse);  // a tie: kept
  EXPECT_EQ(c.stats().discarded_pairs, 1u);
  EXPECT_LT(std::abs(c.stats().last_mean), 0.1);
}

// End to end with the learner: a close decision (reuse 6 % cheaper per
// call) is confirmed, the process says arena, calls move to arena; the
// re-check 30 s later learns again, settles close again and confirms again.
TEST(ModeConfirmationTest, FollowsTheLearnersReChecks) {
  AutoLearner l;
  ConfirmationSlot slot;
  ModeConfirmation c({}, &slot);
  FakeProcess p;
  Server s(21);
  s.sigma = 0.05;
  // Per call (the call's own thread) reuse looks 6 % cheaper; the process
  // spends 5 % less with arena.
  const std::array<double, 3> per_call = {10, 5.0, 4.7};
  s.per_byte = {12, 8.0, 8.4};
  for (int decision = 1; decision <= 2; ++decision) {
    std::normal_distribution<double> z(0.0, 0.05);
    while (l.Wants(s.t)) {
      const AllocationMode m = l.NextTrialMode();
      l.ObserveCall(
          m, per_call[static_cast<int>(m)] * s.bytes * std::exp(z(s.rng)),
          s.bytes, s.t);
      s.Run(m, p);
    }
    ASSERT_EQ(l.current(), kReuse);
    const std::optional<AllocationMode> rival = l.CloseRival(0.15);
    ASSERT_TRUE(rival.has_value());
    EXPECT_EQ(*rival, kArena);
    EXPECT_FALSE(l.CloseRival(0.01).has_value());
    c.Request(l.current(), *rival);
    const AllocationMode verdict = s.Confirm(c, p);
    l.Confirm(verdict);
    EXPECT_EQ(l.current(), kArena);
    EXPECT_EQ(c.stats().finished, static_cast<uint64_t>(decision));
    EXPECT_EQ(l.snapshot().decisions, static_cast<uint64_t>(decision));
    // Settled on arena until the re-check.
    EXPECT_FALSE(l.Wants(s.t + 1));
    s.t += 30;
  }
}

}  // namespace
}  // namespace arenarpc::internal
