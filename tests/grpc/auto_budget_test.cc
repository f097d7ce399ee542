// kAuto's learning budget and what a trial is, at the allocator driven by
// hand (as sync_handler.h and gRPC's callback handler drive it): a call is
// a trial only while what learning spent fits the process-wide share of
// the process's CPU plus the start-up credit; sync calls are timed in turn
// per mode, callback calls only when released where they were made; reuse
// calls on new pool instances are left out, up to 32. The share is
// process-wide and the smallest install's wins: own binary, each test
// right alone (ctest runs each in a process of its own) and in this order.
#include <gtest/gtest.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <string>
#include <thread>
#include <vector>

#include "arenarpc/grpc/allocators.h"
#include "arenarpc/grpc/stats.h"
#include "grpc/grpc_test_util.h"
#include "src/internal/auto_learner.h"

namespace arenarpc {
namespace {

using ::arenarpc::echo::EchoRequest;
using ::arenarpc::echo::EchoResponse;
using ::arenarpc::testing::BurnCpu;
using ::arenarpc::testing::HolderMode;
using ::arenarpc::testing::MeasuredStatsOf;
using Allocator = MeteredMessageAllocator<EchoRequest, EchoResponse>;
using Holder = internal::CallHolder<EchoRequest, EchoResponse>;
using Costs = std::array<double, kNumAllocationModes>;  // ns, by mode

constexpr double kCreditNs = internal::LearningBudget::kCreditNs;
// How much process CPU the budget's cached reading may lag (it is read at
// most every 10 ms of wall time): generous.
constexpr double kStaleCpuNs = 50e6;

ServerOptions AutoShare(double share) {
  ServerOptions o(AllocationMode::kAuto);
  o.automatic.max_cpu_share = share;
  return o;
}

double ProcessCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}
double SpentNs() { return GetMeasuringCost().learning_cpu_s * 1e9; }

// A sync call's messages, as SyncUnaryHandler::Deserialize takes them.
Holder* AllocateSync(Allocator& a, double request_bytes) {
  internal::sync_request_bytes = request_bytes;
  auto* h = static_cast<Holder*>(a.AllocateMessages());
  internal::sync_request_bytes = -1;
  return h;
}

// Empties the echo types' reuse pools: the next reuse call's messages are
// new instances (the pool warming).
void DrainEchoPools() {
  internal::TrimDefaultMessagePools<EchoRequest, EchoResponse>();
}

// What a run of sync calls saw. A call not handed a trial while the method
// was learning was refused by the budget (one call at a time, the learner
// always has a trial to give): each such refusal must have been out of
// room, each trial within it.
struct SyncRun {
  int trials = 0;
  int refused = 0;
  std::vector<AllocationMode> first;  // the first trials' modes
  bool within = true;                 // every hand-out and refusal right
};

// Sync calls of 1000 bytes costing `cost` by mode, `between` of untimed
// work before each, until the method settles or `max_calls`.
SyncRun SyncCalls(Allocator& a, const std::string& name, double share,
                  const Costs& cost, double between, int max_calls) {
  SyncRun run;
  for (int i = 0; i < max_calls && !MeasuredStatsOf(name).settled; ++i) {
    BurnCpu(between);
    const double spent_before = SpentNs();
    const double cpu_before = ProcessCpuNs();
    Holder* h = AllocateSync(a, 1000);
    const double spent_after = SpentNs();
    const double cpu_after = ProcessCpuNs();
    if (h->Timed()) {
      ++run.trials;
      if (run.first.size() < 3) run.first.push_back(HolderMode(h));
      if (spent_before > share * cpu_after + kCreditNs) run.within = false;
    } else {
      ++run.refused;
      if (spent_after <= share * (cpu_before - kStaleCpuNs) + kCreditNs) {
        run.within = false;
      }
    }
    BurnCpu(cost[static_cast<int>(HolderMode(h))]);
    h->Release();
  }
  return run;
}

// Sync calls are timed in turn in each mode and the cheapest kept. The
// prior holds heap out until the first timed call shows the method small
// (1000 bytes), so heap's turn comes third. A share of 0.5 leaves room for
// every trial here (up to a few tens of ms billed against 0.5 of at least
// 100 ms): one refused would mean the share was not this install's.
TEST(AutoBudgetTest, SyncCallsAreTimedInTurnAndTheCheapestKept) {
  Allocator a("/t.Budget/InTurn", AutoShare(0.5));
  while (ProcessCpuNs() < 100e6) BurnCpu(1e6);
  const double spent0 = SpentNs();
  // heap 3 ms, arena 2 ms, reuse 1 ms a call.
  const SyncRun run =
      SyncCalls(a, "/t.Budget/InTurn", 0.5, {3e6, 2e6, 1e6}, 0, 2000);
  EXPECT_EQ(run.first, (std::vector<AllocationMode>{AllocationMode::kArena,
                                                    AllocationMode::kReuse,
                                                    AllocationMode::kHeap}));
  EXPECT_TRUE(run.within);
  EXPECT_EQ(run.refused, 0);
  const MeasuredMethodStats s = MeasuredStatsOf("/t.Budget/InTurn");
  ASSERT_TRUE(s.settled) << run.trials << " trials";
  EXPECT_EQ(s.mode, AllocationMode::kReuse);
  EXPECT_EQ(a.automatic()->mode(), AllocationMode::kReuse);
  // Every trial observed, or left out as a reuse call on a new instance.
  EXPECT_EQ(s.timed_calls + s.warming_calls, static_cast<uint64_t>(run.trials));
  EXPECT_EQ(s.lost_calls, 0u);
  EXPECT_EQ(s.failed_calls, 0u);
  EXPECT_GT(s.cost_us[0], s.cost_us[2]);
  // Billed: heap's trials 1 ms dearer than arena, the mode calls run in
  // until it is dropped (5 or 6 of them); arena's and reuse's nothing more.
  EXPECT_GE(SpentNs() - spent0, 3e6);
}

// Trials only while the budget has room: with a share that leaves 3 to 8
// ms above what learning spent (alone, or after the test above), a
// decision that bills ~30 ms is paused until the process's CPU grows, and
// what is billed stays within the share, the credit and the one trial in
// flight (its whole cost bounds its excess).
TEST(AutoBudgetTest, TrialsOnlyWhileTheBudgetHasRoom) {
  while (ProcessCpuNs() < 100e6) BurnCpu(1e6);
  const double share =
      std::max(SpentNs() + 3e6 - kCreditNs, 3e6) / ProcessCpuNs();
  ASSERT_LT(share, 0.5);  // lowers the process's (the smallest wins)
  Allocator a("/t.Budget/Room", AutoShare(share));
  // heap 6 ms, arena 2 ms (the mode calls run in), reuse 4 ms a call:
  // heap's trials after its first bill 4 ms each, reuse's 2 ms, 5 or more of
  // each.
  const Costs cost = {6e6, 2e6, 4e6};
  const SyncRun run = SyncCalls(a, "/t.Budget/Room", share, cost, 0, 20000);
  EXPECT_TRUE(run.within);
  EXPECT_GT(run.refused, 0);
  const MeasuredMethodStats s = MeasuredStatsOf("/t.Budget/Room");
  ASSERT_TRUE(s.settled) << run.trials << " trials, " << run.refused
                         << " refused";
  EXPECT_EQ(s.mode, AllocationMode::kArena);
  // The background thread's memory releases are billed too (not gated):
  // one call's cost more for them.
  EXPECT_LE(SpentNs(), share * ProcessCpuNs() + kCreditNs + 2 * cost[0]);
}

// A callback call (the allocator given no request size) whose holder is
// made and released on this thread with no other holder in between is
// timed; released on another thread, or around another call's holder, it
// is lost (counted, not observed).
TEST(AutoBudgetTest, CallbackCallsAreTimedOnlyWhereTheyEnd) {
  Allocator a("/t.Budget/Callback", AutoShare(0.5));
  EchoRequest request;
  echo::BuildEchoRequest(5, 7, &request);
  const std::string bytes = request.SerializeAsString();
  // A callback trial (the same cost in every mode: little excess billed,
  // so some CPU before it gives the budget room).
  auto trial = [&] {
    for (int i = 0; i < 1000; ++i) {
      BurnCpu(2e6);
      auto* h = static_cast<Holder*>(a.AllocateMessages());
      EXPECT_TRUE(h->request()->ParseFromString(bytes));
      BurnCpu(2e5);
      if (h->Timed()) return h;
      h->Release();
    }
    ADD_FAILURE() << "no trial handed out";
    return static_cast<Holder*>(nullptr);
  };
  for (int i = 0; i < 3; ++i) {
    Holder* h = trial();
    ASSERT_NE(h, nullptr);
    h->Release();
  }
  MeasuredMethodStats s = MeasuredStatsOf("/t.Budget/Callback");
  EXPECT_EQ(s.timed_calls + s.warming_calls, 3u);
  EXPECT_EQ(s.lost_calls, 0u);
  // Released on another thread.
  Holder* moved = trial();
  ASSERT_NE(moved, nullptr);
  std::thread([moved] { moved->Release(); }).join();
  s = MeasuredStatsOf("/t.Budget/Callback");
  EXPECT_EQ(s.lost_calls, 1u);
  // Around another call: the other's holder made (A's clock is no longer
  // A's alone), then both released.
  Holder* first = trial();
  ASSERT_NE(first, nullptr);
  auto* other = static_cast<Holder*>(a.AllocateMessages());
  first->Release();
  other->Release();
  s = MeasuredStatsOf("/t.Budget/Callback");
  EXPECT_GE(s.lost_calls, 2u);  // and `other`, if it was a trial too
  EXPECT_EQ(s.timed_calls + s.warming_calls, 3u);
  EXPECT_FALSE(s.untimed);
}

// Sync calls where reuse costs 2 ms on new pool instances and 0.1 ms on
// warm ones (arena 0.4 ms, heap 0.6 ms); the pools drained before each
// call until reuse ran `cold_reuse` calls. Returns the method's stats.
MeasuredMethodStats WithColdReuse(const std::string& name, int cold_reuse) {
  Allocator a(name, AutoShare(0.5));
  int reuse_calls = 0;
  for (int i = 0; i < 3000 && !MeasuredStatsOf(name).settled; ++i) {
    BurnCpu(1e6);  // room in the budget
    const bool drained = reuse_calls < cold_reuse;
    if (drained) DrainEchoPools();
    Holder* h = AllocateSync(a, 1000);
    const AllocationMode m = HolderMode(h);
    if (m == AllocationMode::kReuse) ++reuse_calls;
    const Costs cost = {6e5, 4e5, drained ? 2e6 : 1e5};
    BurnCpu(cost[static_cast<int>(m)]);
    h->Release();
  }
  return MeasuredStatsOf(name);
}

// A reuse call on a new instance measures the pool warming, not reuse: it
// is not observed (up to 32 a decision), so reuse's few cold calls do not
// decide against it.
TEST(AutoBudgetTest, WarmingReuseCallsAreNotObserved) {
  const MeasuredMethodStats s = WithColdReuse("/t.Budget/Warming", 8);
  ASSERT_TRUE(s.settled) << s.timed_calls << " timed";
  EXPECT_EQ(s.mode, AllocationMode::kReuse);
  EXPECT_GE(s.warming_calls, 8u);
  EXPECT_LE(s.warming_calls, 10u);
}

// A pool that never warms is measured as it is after 32 calls left out:
// the decision does not wait for ever, and reuse at 2 ms loses to arena.
TEST(AutoBudgetTest, APoolThatNeverWarmsIsMeasuredAfter32Calls) {
  const MeasuredMethodStats s = WithColdReuse("/t.Budget/Cold", 1 << 30);
  ASSERT_TRUE(s.settled) << s.timed_calls << " timed";
  EXPECT_EQ(s.mode, AllocationMode::kArena);
  EXPECT_EQ(s.warming_calls, 32u);
}

}  // namespace
}  // namespace arenarpc
