// ServerOptions::idle_trim and max_pooled_bytes (src/grpc/idle_trim.cc):
// both are process-wide, and ctest runs each test in a process of its own.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "arenarpc/grpc/server.h"
#include "arenarpc/grpc/stats.h"
#include "arenarpc/page_pool.h"
#include "test_messages.pb.h"

namespace arenarpc {
namespace {

using test::Record;
using Holder = ::grpc::MessageHolder<Record, Record>;

std::vector<Holder*> AllocateCalls(AllocationMode mode, int n) {
  std::vector<Holder*> holders;
  for (int i = 0; i < n; ++i) {
    holders.push_back(
        GetMessageAllocator<Record, Record>(mode)->AllocateMessages());
    holders.back()->request()->set_title(std::string(1000, 'r'));
  }
  return holders;
}

template <class Pred>
bool WaitFor(Pred pred) {
  for (int i = 0; i < 500 && !pred(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

TEST(IdleTrimTest, TrimsPoolsOnceCallsStop) {
  ServerOptions options(AllocationMode::kReuse);
  options.idle_trim.idle_ms = 100;
  internal::ApplyServerLimits(options);
  // Calls on a thread that then exits: its cached instances and pages go
  // to the depots, where only trimming can give them back.
  std::thread([] {
    for (Holder* h : AllocateCalls(AllocationMode::kReuse, 20)) h->Release();
  }).join();
  ASSERT_GE(SharedMessagePool<Record>().Stats().idle, 20u);
  ASSERT_GT(PagePool::Default().Stats().pages_in_depot, 0u);

  // The trimmer counts a trim after it is done: wait for the count too.
  ASSERT_TRUE(WaitFor([] {
    return SharedMessagePool<Record>().Stats().idle == 0 &&
           PagePool::Default().Stats().pages_in_depot == 0 &&
           GetGrpcStats().idle_trims >= 1;
  }));
  const uint64_t trims = GetGrpcStats().idle_trims;
  // Once per idle period: no call since, no further trim.
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(GetGrpcStats().idle_trims, trims);
}

// A gRPC worker thread that served calls and then idles keeps its pooled
// arenas and page cache; idle trimming must reach them, not only depots.
TEST(IdleTrimTest, ReachesTheCachesOfThreadsThatStayAlive) {
  ServerOptions options(AllocationMode::kArena);
  options.idle_trim.idle_ms = 100;
  std::mutex mu;
  std::condition_variable cv;
  bool served = false, stop = false;
  std::thread worker([&] {
    for (Holder* h : AllocateCalls(AllocationMode::kArena, 20)) h->Release();
    std::unique_lock<std::mutex> lock(mu);
    served = true;
    cv.notify_all();
    cv.wait(lock, [&] { return stop; });  // alive and idle, like a gRPC pool
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return served; });
  }
  ASSERT_GT(PagePool::Default().Stats().pages_cached, 0u);
  internal::ApplyServerLimits(options);
  EXPECT_TRUE(WaitFor([] {
    const PagePoolStats s = PagePool::Default().Stats();
    return s.pages_cached == 0 && s.pages_in_use == 0;
  })) << PagePool::Default().Stats().pages_cached
      << " cached, " << PagePool::Default().Stats().pages_in_use << " in use";
  {
    std::lock_guard<std::mutex> lock(mu);
    stop = true;
  }
  cv.notify_all();
  worker.join();
}

TEST(IdleTrimTest, OffByDefault) {
  internal::ApplyServerLimits(ServerOptions(AllocationMode::kReuse));
  std::thread([] {
    for (Holder* h : AllocateCalls(AllocationMode::kReuse, 20)) h->Release();
  }).join();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(GetGrpcStats().idle_trims, 0u);
  EXPECT_GE(SharedMessagePool<Record>().Stats().idle, 20u);
}

TEST(PooledCapTest, OverTheCapCallsGetHeapMessages) {
  ServerOptions options(AllocationMode::kArena);
  options.max_pooled_bytes = 4 * PagePool::Default().page_size();
  internal::ApplyServerLimits(options);
  // Each arena call takes at least two pages (request and response arenas):
  // from the third call on, the pool holds more than the cap.
  std::vector<Holder*> calls = AllocateCalls(AllocationMode::kArena, 10);
  const GrpcStats s = GetGrpcStats();
  const auto heap = static_cast<int>(AllocationMode::kHeap);
  const auto arena = static_cast<int>(AllocationMode::kArena);
  EXPECT_GE(s.modes[arena].in_flight, 1u);
  EXPECT_GE(s.modes[heap].in_flight, 1u);
  EXPECT_EQ(s.modes[heap].in_flight + s.modes[arena].in_flight, 10u);
  EXPECT_EQ(s.over_cap_heap_calls, s.modes[heap].in_flight);
  for (Holder* h : calls) h->Release();
  const GrpcStats after = GetGrpcStats();
  EXPECT_EQ(after.modes[heap].in_flight + after.modes[arena].in_flight, 0u);
  EXPECT_NE(
      RenderPrometheusStats().find("arenarpc_grpc_over_cap_heap_calls_total " +
                                   std::to_string(s.over_cap_heap_calls)),
      std::string::npos);
  // The depots were trimmed because of the cap (asynchronously).
  EXPECT_TRUE(WaitFor([] { return GetGrpcStats().over_cap_trims >= 1; }));
}

TEST(PooledCapTest, NoCapNoFallback) {
  std::vector<Holder*> calls = AllocateCalls(AllocationMode::kArena, 10);
  EXPECT_EQ(GetGrpcStats().over_cap_heap_calls, 0u);
  for (Holder* h : calls) h->Release();
}

}  // namespace
}  // namespace arenarpc
