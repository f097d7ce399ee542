// ScopedArenas on many threads, handed between threads. Run under TSan, so
// the messages have no map fields (see Record in test_messages.proto).
#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
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

// Counts its destruction, and on which thread it happened.
struct DestroyProbe {
  DestroyProbe(std::atomic<int>* n, std::atomic<int>* elsewhere)
      : n(n), elsewhere(elsewhere), made_on(std::this_thread::get_id()) {}
  ~DestroyProbe() {
    n->fetch_add(1);
    if (std::this_thread::get_id() != made_on) elsewhere->fetch_add(1);
  }
  std::atomic<int>* n;
  std::atomic<int>* elsewhere;
  std::thread::id made_on;
};

struct Made {
  ScopedArena arena;
  test::Record* record = nullptr;
  std::string wire;  // what *record serialized to when made
};

TEST(ArenaConcurrencyTest, ArenasDestroyedOnAnotherThread) {
  // Like a gRPC call finished from another thread: made here, dropped there.
  std::mutex mu;
  std::deque<Made> queue;
  std::atomic<int> destroyed{0}, destroyed_elsewhere{0};
  const uint64_t acquired_before = GetArenaStats().arenas_acquired;
  std::thread producer([&] {
    std::mt19937 rng(9);
    for (int i = 0; i < 300; ++i) {
      Made m;
      m.record = m.arena.Create<test::Record>();
      test::FillRecord(rng, 2, m.record);
      m.wire = m.record->SerializeAsString();
      m.arena.Create<DestroyProbe>(&destroyed, &destroyed_elsewhere);
      std::lock_guard<std::mutex> lock(mu);
      queue.push_back(std::move(m));
    }
  });
  int consumed = 0, intact = 0;
  while (consumed < 300) {
    std::optional<Made> item;  // empty: holds no arena while waiting
    {
      std::lock_guard<std::mutex> lock(mu);
      if (queue.empty()) continue;
      item.emplace(std::move(queue.front()));
      queue.pop_front();
    }
    // The message moved with its arena, content intact on this thread.
    if (item->record->SerializeAsString() == item->wire) ++intact;
    ++consumed;  // item's arena is reset here, on this thread
  }
  producer.join();
  EXPECT_EQ(intact, 300);
  // Every scope's destructors ran, on this (the consumer's) thread.
  EXPECT_EQ(destroyed.load(), 300);
  EXPECT_EQ(destroyed_elsewhere.load(), 300);
  EXPECT_EQ(GetArenaStats().arenas_acquired - acquired_before, 300u);
  // The pages went back: in use is at most the first page of each idle
  // arena.
  EXPECT_LE(PagePool::Default().Stats().pages_in_use,
            GetArenaStats().arenas_idle);
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
