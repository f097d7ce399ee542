// kAuto's memory: what a mode keeps idle is given back, on the background
// thread, once calls stop running in it. After a decision, every mode but
// the chosen one; while learning, a heap or arena trial of 256 KiB or more
// that ran beside calls in another mode; reuse's instances are kept while
// learning (they are what makes reuse cheap), as are small trials' leftovers.
// The background thread is never started here: its tasks run on the test
// thread when the test says (RunBackgroundOnce), so what was posted and
// what it gave back are read deterministically. Own binary: the pools and
// the background thread are process-wide.
#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <string>

#include "arenarpc/arena.h"
#include "arenarpc/grpc/allocators.h"
#include "arenarpc/grpc/stats.h"
#include "arenarpc/page_pool.h"
#include "grpc/grpc_test_util.h"
#include "src/internal/background.h"

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

// Before anything is posted in this process: the thread's body is kept,
// never run.
const bool kManualBackground = [] {
  internal::SetBackgroundThreadStarterForTesting(
      [](std::function<void()> /*body*/) {});
  return true;
}();

uint64_t IdleReuse() {
  return DefaultMessagePool<EchoRequest>().Stats().idle +
         DefaultMessagePool<EchoResponse>().Stats().idle;
}
uint64_t IdleArenas() { return GetArenaStats().arenas_idle; }
uint64_t CachedPages() { return PagePool::Default().Stats().pages_cached; }

// One sync call (as sync_handler.h makes it) of `bytes` on the wire,
// parsed, costing cost[mode]. What it was, and how many background tasks
// it posted (none runs meanwhile).
struct Call {
  AllocationMode mode = AllocationMode::kArena;
  AllocationMode before = AllocationMode::kArena;  // the method's, before
  bool trial = false;
  bool settled = false;  // this call took a decision
  uint64_t posted = 0;
};
Call SyncCall(Allocator& a, const std::string& name, double bytes,
              const Costs& cost) {
  Call c;
  c.before = a.automatic()->mode();
  const uint64_t decisions = MeasuredStatsOf(name).decisions;
  const uint64_t progress = internal::BackgroundProgress();
  internal::sync_request_bytes = bytes;
  auto* h = static_cast<Holder*>(a.AllocateMessages());
  internal::sync_request_bytes = -1;
  EchoRequest request;
  echo::BuildEchoRequest(5, 7, &request);
  EXPECT_TRUE(h->request()->ParseFromString(request.SerializeAsString()));
  c.mode = HolderMode(h);
  c.trial = h->Timed();
  BurnCpu(cost[static_cast<int>(c.mode)]);
  h->Release();
  c.posted = internal::BackgroundProgress() - progress;
  c.settled = MeasuredStatsOf(name).decisions > decisions;
  return c;
}

// Learning in 1000-byte calls where arena is cheapest: reuse's instances
// stay while it learns (each reuse trial's kept, the background run after
// every call), small heap trials post nothing; the decision posts heap's
// and reuse's releases, and running them empties the reuse pools.
TEST(AutoMemoryTest, SettledOnArenaReuseInstancesAreGivenBack) {
  const std::string name = "/t.Memory/Arena";
  Allocator a(name, testing::RealCallsOptions());
  const Costs cost = {6e5, 2e5, 4e5};  // heap 3x arena, reuse 2x
  bool reused = false;
  Call c;
  for (int i = 0; i < 1000 && !c.settled; ++i) {
    c = SyncCall(a, name, 1000, cost);
    ASSERT_TRUE(c.trial);
    if (c.settled) break;
    EXPECT_EQ(c.posted, 0u) << AllocationModeName(c.mode) << " trial";
    internal::RunBackgroundOnce();
    reused = reused || c.mode == AllocationMode::kReuse;
    if (reused) {
      EXPECT_GT(IdleReuse(), 0u);
    }
  }
  ASSERT_TRUE(c.settled);
  ASSERT_EQ(a.automatic()->mode(), AllocationMode::kArena);
  EXPECT_EQ(c.posted, 2u);  // heap's and reuse's
  EXPECT_GT(IdleReuse(), 0u);
  internal::RunBackgroundOnce();
  EXPECT_EQ(IdleReuse(), 0u);
}

// Settled on reuse: arena's idle arenas and cached pages go back; reuse's
// instances stay (calls run in it).
TEST(AutoMemoryTest, SettledOnReuseArenaPagesAreGivenBack) {
  const std::string name = "/t.Memory/Reuse";
  Allocator a(name, testing::RealCallsOptions());
  const Costs cost = {6e5, 4e5, 2e5};  // heap 3x reuse, arena 2x
  Call c;
  for (int i = 0; i < 1000 && !c.settled; ++i) {
    c = SyncCall(a, name, 1000, cost);
    if (!c.settled) internal::RunBackgroundOnce();
  }
  ASSERT_TRUE(c.settled);
  ASSERT_EQ(a.automatic()->mode(), AllocationMode::kReuse);
  EXPECT_EQ(c.posted, 2u);  // heap's and arena's
  ASSERT_GT(IdleArenas(), 0u);
  ASSERT_GT(CachedPages(), 0u);
  internal::RunBackgroundOnce();
  EXPECT_EQ(IdleArenas(), 0u);
  EXPECT_EQ(CachedPages(), 0u);
  EXPECT_GT(IdleReuse(), 0u);
}

// Trials of 300 KiB (the prior off, so heap is tried too; re-checked at
// once): a heap trial beside arena's calls posts heap's release at once;
// once settled on reuse, the next decision's arena trials post arena's, and
// running it empties arena's idle memory; reuse's trials keep theirs.
TEST(AutoMemoryTest, LargeTrialsAreGivenBackWhileLearning) {
  const std::string name = "/t.Memory/Large";
  ServerOptions options = testing::RealCallsOptions();
  options.automatic.prior.min_bytes = 0;
  options.automatic.recheck_after_s = 0;
  Allocator a(name, options);
  const Costs cost = {9e5, 6e5, 3e5};  // heap 3x reuse, arena 2x
  int heap_trials = 0;
  for (int i = 0; i < 2000; ++i) {
    const Call c = SyncCall(a, name, 300 << 10, cost);
    ASSERT_TRUE(c.trial);
    if (c.settled) {
      internal::RunBackgroundOnce();
      continue;
    }
    if (c.mode == AllocationMode::kHeap) {
      ++heap_trials;
      EXPECT_EQ(c.posted, 1u) << "a large heap trial";
    } else if (c.mode == AllocationMode::kReuse || c.mode == c.before) {
      EXPECT_EQ(c.posted, 0u) << AllocationModeName(c.mode) << " trial in "
                              << AllocationModeName(c.before);
    } else {
      // An arena trial beside reuse's calls.
      EXPECT_EQ(c.posted, 1u);
      ASSERT_GT(IdleArenas(), 0u);
      internal::RunBackgroundOnce();
      EXPECT_EQ(IdleArenas(), 0u);
      EXPECT_EQ(CachedPages(), 0u);
      EXPECT_GT(heap_trials, 0);
      return;
    }
    internal::RunBackgroundOnce();
  }
  ADD_FAILURE() << "no arena trial beside reuse's calls";
}

}  // namespace
}  // namespace arenarpc
