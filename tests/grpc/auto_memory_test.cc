// kAuto's memory (src/grpc/auto_memory.h): which modes' idle memory is
// given back after the learner moves, and that giving it back empties what
// the mode holds (process-wide pools and a releasing thread: own binary).
#include "src/grpc/auto_memory.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>

#include "arenarpc/arena.h"
#include "arenarpc/grpc/server.h"
#include "arenarpc/grpc/stats.h"
#include "arenarpc/message_pool.h"
#include "arenarpc/page_pool.h"
#include "grpc/grpc_test_util.h"

namespace arenarpc::internal {
namespace {

using ::arenarpc::echo::EchoRequest;
using ::arenarpc::echo::EchoResponse;
using ::arenarpc::testing::WaitFor;

constexpr AllocationMode kHeap = AllocationMode::kHeap;
constexpr AllocationMode kArena = AllocationMode::kArena;
constexpr AllocationMode kReuse = AllocationMode::kReuse;
constexpr double kLarge = AutoMemory::kTrialBytes;
constexpr double kSmall = AutoMemory::kTrialBytes - 1;

TEST(AutoMemoryTest, TheModeCallsLeftIsGivenBack) {
  AutoMemory memory;
  // The first call observed: nothing was running before.
  EXPECT_EQ(memory.Note(kArena, false, kArena, kSmall), 0u);
  EXPECT_EQ(memory.Note(kArena, false, kArena, kLarge), 0u);  // running
  // The lead moved calls to reuse: arena's memory goes.
  EXPECT_EQ(memory.Note(kReuse, false, kReuse, kSmall), ModeBit(kArena));
  EXPECT_EQ(memory.Note(kReuse, false, kReuse, kSmall), 0u);
}

TEST(AutoMemoryTest, EveryOtherModeIsGivenBackOnceWhenItSettles) {
  AutoMemory memory;
  EXPECT_EQ(memory.Note(kReuse, false, kReuse, kSmall), 0u);
  EXPECT_EQ(memory.Note(kReuse, true, kReuse, kSmall),
            ModeBit(kHeap) | ModeBit(kArena));
  EXPECT_EQ(memory.Note(kReuse, true, kReuse, kSmall), 0u);
  // A re-check, then settled again: its trials ended again.
  EXPECT_EQ(memory.Note(kReuse, false, kReuse, kSmall), 0u);
  EXPECT_EQ(memory.Note(kReuse, true, kReuse, kSmall),
            ModeBit(kHeap) | ModeBit(kArena));
}

TEST(AutoMemoryTest, ALargeHeapOrArenaTrialIsGivenBack) {
  AutoMemory memory;
  EXPECT_EQ(memory.Note(kReuse, false, kReuse, kLarge), 0u);  // running
  EXPECT_EQ(memory.Note(kReuse, false, kHeap, kLarge), ModeBit(kHeap));
  EXPECT_EQ(memory.Note(kReuse, false, kArena, kLarge), ModeBit(kArena));
  EXPECT_EQ(memory.Note(kReuse, false, kHeap, kSmall), 0u);
  EXPECT_EQ(memory.Note(kReuse, false, kArena, kSmall), 0u);
  // Reuse's trials keep theirs while it learns (see AutoMemory::Note).
  EXPECT_EQ(memory.Note(kArena, false, kArena, kLarge), ModeBit(kReuse));
  EXPECT_EQ(memory.Note(kArena, false, kReuse, kLarge), 0u);
  EXPECT_EQ(memory.Note(kArena, false, kReuse, kSmall), 0u);
}

// Settled in arena: a reuse trial that ends after the decision (an async
// server's call posted before it) gives its instance back, whatever its
// size; settled in reuse, a reuse call never does.
TEST(AutoMemoryTest, AReuseTrialEndingAfterTheDecisionIsGivenBack) {
  AutoMemory memory;
  EXPECT_EQ(memory.Note(kArena, false, kArena, kSmall), 0u);
  EXPECT_EQ(memory.Note(kArena, true, kArena, kSmall),
            ModeBit(kHeap) | ModeBit(kReuse));  // settled: its trials ended
  EXPECT_EQ(memory.Note(kArena, true, kReuse, kSmall), ModeBit(kReuse));
  EXPECT_EQ(memory.Note(kArena, true, kReuse, kLarge), ModeBit(kReuse));
  EXPECT_EQ(memory.Note(kArena, true, kArena, kLarge), 0u);
  AutoMemory in_reuse;
  EXPECT_EQ(in_reuse.Note(kReuse, true, kReuse, kLarge),
            ModeBit(kHeap) | ModeBit(kArena));
  EXPECT_EQ(in_reuse.Note(kReuse, true, kReuse, kLarge), 0u);
}

std::atomic<int> heap_trims{0};
void CountHeapTrim() { heap_trims.fetch_add(1); }

MessagePool<EchoRequest>& TestPool() {
  static MessagePool<EchoRequest>* const pool = new MessagePool<EchoRequest>();
  return *pool;
}
void TrimTestPool() {
  TestPool().Trim();
  TestPool().ReleaseIdleCaches(std::chrono::milliseconds(0));
}

std::string Bytes(int scale) {
  EchoRequest r;
  echo::BuildEchoRequest(scale, 7, &r);
  return r.SerializeAsString();
}

uint64_t CachedPages() { return PagePool::Default().Stats().pages_cached; }

TEST(ReleaseModeMemoryTest, ArenaGivesBackIdleArenasAndPages) {
  const std::string bytes = Bytes(100);
  for (int i = 0; i < 4; ++i) {
    ScopedArena arena;
    EchoRequest* r = arena.Create<EchoRequest>();
    ASSERT_TRUE(r->ParseFromString(bytes));
  }
  ASSERT_GT(GetArenaStats().arenas_idle, 0u);
  ASSERT_GT(CachedPages(), 0u);
  heap_trims = 0;
  ReleaseModeMemory(ModeBit(kArena), nullptr, &CountHeapTrim);
  EXPECT_EQ(GetArenaStats().arenas_idle, 0u);
  EXPECT_EQ(CachedPages(), 0u);
  EXPECT_EQ(heap_trims, 0);
}

TEST(ReleaseModeMemoryTest, ReuseGivesBackItsIdleInstancesAndTheirPages) {
  const std::string bytes = Bytes(100);
  {
    PooledMessage<EchoRequest> a = TestPool().Acquire();
    PooledMessage<EchoRequest> b = TestPool().Acquire();
    ASSERT_TRUE(a.ParseFrom(bytes));
    ASSERT_TRUE(b.ParseFrom(bytes));
  }
  ASSERT_GT(TestPool().Stats().idle, 0u);
  heap_trims = 0;
  ReleaseModeMemory(ModeBit(kReuse), &TrimTestPool, &CountHeapTrim);
  EXPECT_EQ(TestPool().Stats().idle, 0u);
  EXPECT_EQ(TestPool().Stats().retained_bytes, 0u);
  EXPECT_EQ(CachedPages(), 0u);
  EXPECT_EQ(heap_trims, 0);
}

TEST(ReleaseModeMemoryTest, HeapTrimsTheHeapOnly) {
  {
    ScopedArena arena;  // an idle arena that must stay
    ASSERT_TRUE(arena.Create<EchoRequest>()->ParseFromString(Bytes(10)));
  }
  const uint64_t idle = GetArenaStats().arenas_idle;
  ASSERT_GT(idle, 0u);
  heap_trims = 0;
  ReleaseModeMemory(ModeBit(kHeap), &TrimTestPool, &CountHeapTrim);
  EXPECT_EQ(heap_trims, 1);
  EXPECT_EQ(GetArenaStats().arenas_idle, idle);
}

// A queued release runs on the releasing thread and bills what it spent
// there (kAuto's learning budget, in the meter) once per merged release.
std::atomic<int> bills{0};
std::atomic<double> billed_ns{0};
void CountBill(double ns) {
  billed_ns.store(billed_ns.load() + ns);
  bills.fetch_add(1);
}

TEST(QueueModeReleaseTest, TheReleasingThreadBillsItsCpu) {
  const uint64_t done = ModeReleasesDone();
  QueueModeRelease(ModeBit(kHeap) | ModeBit(kArena), nullptr, &CountBill);
  ASSERT_TRUE(WaitFor([&] { return ModeReleasesDone() > done; }));
  EXPECT_EQ(bills.load(), 1);
  EXPECT_GT(billed_ns.load(), 0) << "malloc_trim and the page pool's trim "
                                    "take CPU on the releasing thread";
}

// The calling thread's work: a call's CPU in its mode.
void BurnCpu(double ns) {
  const double start = MethodMeter::ThreadCpuNs();
  volatile uint64_t x = 1;
  while (MethodMeter::ThreadCpuNs() - start < ns) x = x * 3 + 1;
}

std::atomic<int> reuse_trims{0};
void CountReuseTrim() { reuse_trims.fetch_add(1); }

// The hook in the meter: large sync calls learned in turn (heap 0.6 ms,
// arena 0.4 ms, reuse 0.2 ms of CPU): heap's trials and, once calls run
// in reuse, arena's memory are given back on the releasing thread; when
// it settles on reuse, heap's and arena's again; reuse's never (it runs).
TEST(AutoMemoryHookTest, WhatAutoStopsRunningInIsGivenBack) {
  AutoOptions automatic;
  automatic.max_cpu_share = 0.05;
  automatic.learn = AutoLearning::kRealCalls;
  MethodMeter meter("/t.M/Memory", AllocationMode::kAuto, ShadowOptions{},
                    &EchoRequest::default_instance(),
                    &EchoResponse::default_instance(), automatic,
                    &CountReuseTrim);
  const uint64_t heap_before = ModeReleases(kHeap);
  const uint64_t arena_before = ModeReleases(kArena);
  const double cost[] = {6e5, 4e5, 2e5};
  for (int call = 0; call < 600 && meter.LearnsOnCall(kLarge); ++call) {
    MethodMeter::CallTiming t;
    const AllocationMode m = meter.ModeForCall(kLarge, &t);
    BurnCpu(cost[static_cast<int>(m)]);
    if (t.meter != nullptr) meter.EndTimedCall(t);
    bool settled = false;
    for (const MeasuredMethodStats& s : GetMeasuredMethodStats()) {
      if (s.method == "/t.M/Memory") settled = s.settled;
    }
    if (settled) break;
  }
  ASSERT_EQ(meter.mode(), kReuse);
  // Heap: each large trial and the settling; arena: the move to reuse and
  // the settling (queued releases of one method merge, so at least one).
  EXPECT_TRUE(WaitFor([&] {
    return ModeReleases(kHeap) > heap_before &&
           ModeReleases(kArena) > arena_before;
  })) << ModeReleases(kHeap) - heap_before
      << " heap, " << ModeReleases(kArena) - arena_before << " arena";
  EXPECT_EQ(reuse_trims, 0);
}

}  // namespace
}  // namespace arenarpc::internal
