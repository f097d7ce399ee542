// ScopedArenas on many threads, handed between threads. Run under TSan, so
// the messages have no map fields (see Record in test_messages.proto).
#include <gtest/gtest.h>

#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "arenarpc/arena.h"
#include "arenarpc/page_pool.h"
#include "test_util.h"

namespace arenarpc {
namespace {

TEST(ArenaConcurrencyTest, ManyThreadsBuildAndParse) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([t] {
      std::mt19937 rng(t);
      for (int i = 0; i < 150; ++i) {
        test::Record heap;
        test::FillRecord(rng, 2, &heap);
        const std::string wire = test::Deterministic(heap);
        ScopedArena arena;
        test::Record* node = arena.Create<test::Record>();
        ASSERT_TRUE(node->ParseFromString(wire));
        ASSERT_EQ(test::Deterministic(*node), wire);
      }
    });
  }
  for (auto& th : threads) th.join();
}

TEST(ArenaConcurrencyTest, ArenasDestroyedOnAnotherThread) {
  // Like a gRPC call finished from another thread: made here, dropped there.
  std::mutex mu;
  std::deque<std::pair<ScopedArena, std::string>> queue;
  std::thread producer([&] {
    std::mt19937 rng(9);
    for (int i = 0; i < 300; ++i) {
      ScopedArena arena;
      test::Record* node = arena.Create<test::Record>();
      test::FillRecord(rng, 2, node);
      std::string wire = node->SerializeAsString();
      std::lock_guard<std::mutex> lock(mu);
      queue.emplace_back(std::move(arena), std::move(wire));
    }
  });
  int consumed = 0;
  while (consumed < 300) {
    std::pair<ScopedArena, std::string> item;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (queue.empty()) continue;
      item = std::move(queue.front());
      queue.pop_front();
    }
    ++consumed;  // item's arena is reset here, on this thread
  }
  producer.join();
  EXPECT_EQ(consumed, 300);
}

TEST(ArenaConcurrencyTest, PoolBoundedAfterThreadsExit) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      std::mt19937 rng(100 + t);
      for (int i = 0; i < 100; ++i) {
        ScopedArena arena;
        test::FillRecord(rng, 3, arena.Create<test::Record>());
      }
    });
  }
  for (auto& th : threads) th.join();
  const PagePoolStats s = PagePool::Default().Stats();
  const ArenaOptions o = GetGlobalArenaOptions();
  // Cached pages (the main thread never allocated) are in the depot, capped.
  EXPECT_LE(s.pages_cached * s.page_size, o.pages.depot_capacity_bytes);
  // What is in use is the first page of each idle arena.
  EXPECT_LE(s.pages_in_use, GetArenaStats().arenas_idle);
}

}  // namespace
}  // namespace arenarpc
