// Many threads allocating and returning pages, also across threads. Run
// under TSan in CI.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "arenarpc/page_pool.h"

namespace arenarpc {
namespace {

PagePoolOptions Options() {
  PagePoolOptions o;
  o.page_size = 4096;
  o.depot_capacity_bytes = 32 * o.page_size;
  o.thread_cache_pages = 8;
  return o;
}

TEST(PagePoolConcurrencyTest, ThreadsAllocateAndFreeLocally) {
  PagePool pool(Options());
  constexpr int kThreads = 8;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&pool, t] {
      std::vector<unsigned char*> mine;
      for (int round = 0; round < 300; ++round) {
        for (int i = 0; i < 1 + round % 13; ++i) {
          auto* p = static_cast<unsigned char*>(pool.Allocate());
          ASSERT_NE(p, nullptr);
          p[0] = static_cast<unsigned char>(t);
          p[pool.page_size() - 1] = static_cast<unsigned char>(t);
          mine.push_back(p);
        }
        while (mine.size() > static_cast<size_t>(round % 7)) {
          unsigned char* p = mine.back();
          mine.pop_back();
          // Nobody else wrote to a page while we held it.
          ASSERT_EQ(p[0], t);
          ASSERT_EQ(p[pool.page_size() - 1], t);
          pool.Deallocate(p);
        }
      }
      for (auto* p : mine) pool.Deallocate(p);
    });
  }
  for (auto& th : threads) th.join();
  const PagePoolStats s = pool.Stats();
  EXPECT_EQ(s.pages_in_use, 0u);
  // All threads exited: every cached page is in the depot, within the cap.
  EXPECT_EQ(s.pages_cached, s.pages_in_depot);
  EXPECT_LE(s.pages_in_depot, 32u);
  EXPECT_EQ(s.os_pages_allocated - s.os_pages_released, s.pages_in_depot);
}

TEST(PagePoolConcurrencyTest, ReleaseIdleCachesWhileThreadsAllocate) {
  // A trimmer empties thread caches (idle_for 0: any cache not in use at
  // that instant) while their threads allocate and free: no page is handed
  // out twice or lost.
  PagePool pool(Options());
  constexpr int kThreads = 4;
  std::atomic<bool> stop{false};
  std::atomic<size_t> released{0};
  std::thread trimmer([&] {
    while (!stop.load()) {
      released += pool.ReleaseIdleCaches(std::chrono::milliseconds(0));
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&pool, t] {
      std::vector<unsigned char*> mine;
      for (int round = 0; round < 2000; ++round) {
        for (int i = 0; i < 1 + round % 11; ++i) {
          auto* p = static_cast<unsigned char*>(pool.Allocate());
          ASSERT_NE(p, nullptr);
          p[0] = static_cast<unsigned char>(t);
          mine.push_back(p);
        }
        while (mine.size() > static_cast<size_t>(round % 5)) {
          unsigned char* p = mine.back();
          mine.pop_back();
          ASSERT_EQ(p[0], t);  // nobody else got this page meanwhile
          pool.Deallocate(p);
        }
        if (round % 64 == 0) std::this_thread::yield();  // look idle
      }
      for (auto* p : mine) pool.Deallocate(p);
    });
  }
  for (auto& th : threads) th.join();
  stop.store(true);
  trimmer.join();
  const PagePoolStats s = pool.Stats();
  EXPECT_EQ(s.pages_in_use, 0u);
  EXPECT_EQ(s.os_pages_allocated - s.os_pages_released, s.pages_cached);
  EXPECT_GT(released.load(), 0u) << "the trimmer never caught a cache";
}

TEST(PagePoolConcurrencyTest, ProducersAndConsumersOnDifferentThreads) {
  PagePool pool(Options());
  std::mutex mu;
  std::deque<std::pair<unsigned char*, unsigned char>> queue;
  std::atomic<int> producers_left{3};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 3000; ++i) {
        auto* p = static_cast<unsigned char*>(pool.Allocate());
        ASSERT_NE(p, nullptr);
        const auto tag = static_cast<unsigned char>(t * 31 + i);
        std::memset(p, tag, 64);
        std::lock_guard<std::mutex> lock(mu);
        queue.emplace_back(p, tag);
      }
      producers_left.fetch_sub(1);
    });
  }
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      for (;;) {
        std::pair<unsigned char*, unsigned char> item{nullptr, 0};
        {
          std::lock_guard<std::mutex> lock(mu);
          if (!queue.empty()) {
            item = queue.front();
            queue.pop_front();
          }
        }
        if (item.first == nullptr) {
          if (producers_left.load() == 0) {
            std::lock_guard<std::mutex> lock(mu);
            if (queue.empty()) return;
          }
          std::this_thread::yield();
          continue;
        }
        for (int b = 0; b < 64; ++b) ASSERT_EQ(item.first[b], item.second);
        pool.Deallocate(item.first);
      }
    });
  }
  for (auto& th : threads) th.join();
  const PagePoolStats s = pool.Stats();
  EXPECT_EQ(s.pages_in_use, 0u);
  EXPECT_LE(s.pages_in_depot, 32u);
}

TEST(PagePoolConcurrencyTest, StatsWhileBusy) {
  PagePool pool(Options());
  std::atomic<bool> stop{false};
  std::thread worker([&] {
    while (!stop.load()) pool.Deallocate(pool.Allocate());
  });
  for (int i = 0; i < 2000; ++i) {
    const PagePoolStats s = pool.Stats();
    ASSERT_LE(s.pages_in_use, 1u + 2 * 8u);  // off by a batch at most
  }
  stop = true;
  worker.join();
}

}  // namespace
}  // namespace arenarpc
