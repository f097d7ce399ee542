// PointerCache on its own: per-thread LIFO stacks, batches from Make(), the
// depot and its bound, exiting threads, idle release, and items moving
// between threads. Label concurrency: run under TSan too.
#include "src/internal/pointer_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace arenarpc::internal {
namespace {

using namespace std::chrono_literals;

struct Item {
  std::atomic<bool> out{false};  // handed out by Pop(), not pushed back yet
};

// Counts what it makes and destroys; every item must be destroyed exactly
// once by the time the cache is gone.
class TestCache final : public PointerCache {
 public:
  TestCache(size_t thread_capacity, size_t depot_capacity,
            std::chrono::nanoseconds decay_period = {})
      : PointerCache(thread_capacity, depot_capacity, decay_period) {}
  ~TestCache() override { Shutdown(); }

  Item* PopItem() {
    auto* item = static_cast<Item*>(Pop());
    EXPECT_NE(item, nullptr);
    if (item != nullptr) {
      EXPECT_FALSE(item->out.exchange(true)) << "item handed out twice";
    }
    return item;
  }
  void PushItem(Item* item) {
    item->out.store(false);
    Push(item);
  }
  // An item that did not come from Make(), as a caller may push.
  Item* Foreign() {
    made_.fetch_add(1);
    return new Item;
  }

  int64_t made() const { return made_.load(); }
  int64_t destroyed() const { return destroyed_.load(); }
  size_t make_calls() const { return make_calls_.load(); }
  size_t last_make_request() const { return last_make_request_.load(); }
  // Also counts destroyed items in *counter, which outlives the cache.
  void CountDestroyedIn(std::atomic<int64_t>* counter) { outside_ = counter; }

 protected:
  size_t Make(void** out, size_t n) override {
    make_calls_.fetch_add(1);
    last_make_request_.store(n);
    for (size_t i = 0; i < n; ++i) out[i] = new Item;
    made_.fetch_add(static_cast<int64_t>(n));
    return n;
  }
  void Destroy(void* const* items, size_t n) override {
    for (size_t i = 0; i < n; ++i) {
      auto* item = static_cast<Item*>(items[i]);
      EXPECT_FALSE(item->out.load()) << "destroyed while handed out";
      delete item;
    }
    destroyed_.fetch_add(static_cast<int64_t>(n));
    if (outside_ != nullptr) outside_->fetch_add(static_cast<int64_t>(n));
  }

 private:
  std::atomic<int64_t> made_{0};
  std::atomic<int64_t> destroyed_{0};
  std::atomic<size_t> make_calls_{0};
  std::atomic<size_t> last_make_request_{0};
  std::atomic<int64_t>* outside_ = nullptr;
};

// Items held by the cache, by its own counts and by Make/Destroy: equal.
void ExpectBalanced(const TestCache& cache, int64_t handed_out) {
  const PointerCacheStats c = cache.Stats();
  EXPECT_EQ(cache.made() - cache.destroyed(),
            static_cast<int64_t>(c.in_depot + c.in_threads) + handed_out);
}

TEST(PointerCacheTest, EmptyStackRefillsWithHalfAStackFromMake) {
  TestCache cache(8, 64);
  Item* a = cache.PopItem();
  EXPECT_EQ(cache.make_calls(), 1u);
  EXPECT_EQ(cache.last_make_request(), 4u);  // batch: half of 8
  PointerCacheStats c = cache.Stats();
  EXPECT_EQ(c.in_threads, 3u);
  EXPECT_EQ(c.misses, 1u);
  EXPECT_EQ(c.hits, 0u);
  // The next three come from the stack, without Make().
  Item* more[3];
  for (Item*& m : more) m = cache.PopItem();
  EXPECT_EQ(cache.make_calls(), 1u);
  c = cache.Stats();
  EXPECT_EQ(c.hits, 3u);
  EXPECT_EQ(c.in_threads, 0u);
  cache.PushItem(a);
  for (Item* m : more) cache.PushItem(m);
  ExpectBalanced(cache, 0);
}

TEST(PointerCacheTest, ThisThreadsStackIsLifo) {
  TestCache cache(8, 64);
  Item* a = cache.PopItem();
  Item* b = cache.PopItem();
  cache.PushItem(a);
  cache.PushItem(b);
  EXPECT_EQ(cache.PopItem(), b);  // the hottest first
  EXPECT_EQ(cache.PopItem(), a);
  cache.PushItem(a);
  cache.PushItem(b);
}

TEST(PointerCacheTest, FullStackSendsItsColdestHalfToTheDepot) {
  TestCache cache(4, 64);
  std::vector<Item*> items;
  for (int i = 0; i < 5; ++i) items.push_back(cache.Foreign());
  for (int i = 0; i < 4; ++i) cache.PushItem(items[i]);
  PointerCacheStats c = cache.Stats();
  EXPECT_EQ(c.in_threads, 4u);
  EXPECT_EQ(c.in_depot, 0u);
  cache.PushItem(items[4]);  // full: items[0] and [1] go to the depot
  c = cache.Stats();
  EXPECT_EQ(c.in_threads, 3u);
  EXPECT_EQ(c.in_depot, 2u);
  // The stack kept the hot ones, in order.
  EXPECT_EQ(cache.PopItem(), items[4]);
  EXPECT_EQ(cache.PopItem(), items[3]);
  EXPECT_EQ(cache.PopItem(), items[2]);
  // Empty: refills from the depot, not Make().
  const size_t make_calls = cache.make_calls();
  Item* from_depot[2] = {cache.PopItem(), cache.PopItem()};
  EXPECT_EQ(cache.make_calls(), make_calls);
  EXPECT_TRUE((from_depot[0] == items[0] && from_depot[1] == items[1]) ||
              (from_depot[0] == items[1] && from_depot[1] == items[0]));
  EXPECT_EQ(cache.Stats().in_depot, 0u);
  for (Item* item : items) cache.PushItem(item);
  ExpectBalanced(cache, 0);
}

TEST(PointerCacheTest, DepotIsBoundedAndDestroysTheOverflow) {
  TestCache cache(4, 3);
  for (int i = 0; i < 10; ++i) cache.PushItem(cache.Foreign());
  cache.FlushThisThread();
  const PointerCacheStats c = cache.Stats();
  EXPECT_EQ(c.in_threads, 0u);
  EXPECT_EQ(c.in_depot, 3u);
  EXPECT_EQ(cache.destroyed(), 7);
  ExpectBalanced(cache, 0);
  EXPECT_EQ(cache.DrainDepot(), 3u);
  EXPECT_EQ(cache.Stats().in_depot, 0u);
  EXPECT_EQ(cache.destroyed(), 10);
}

TEST(PointerCacheTest, ZeroDepotDestroysEverythingThatLeavesAStack) {
  TestCache cache(2, 0);
  for (int i = 0; i < 5; ++i) cache.PushItem(cache.Foreign());
  EXPECT_EQ(cache.Stats().in_depot, 0u);
  cache.FlushThisThread();
  EXPECT_EQ(cache.destroyed(), 5);
}

TEST(PointerCacheTest, ExitingThreadsStackGoesToTheDepot) {
  TestCache cache(8, 2);
  std::thread t([&] {
    Item* items[3];
    for (Item*& item : items) item = cache.PopItem();  // one Make() of 4
    for (Item* item : items) cache.PushItem(item);
  });
  t.join();
  const PointerCacheStats c = cache.Stats();
  EXPECT_EQ(c.in_threads, 0u);
  EXPECT_EQ(c.in_depot, 2u);  // 4 items, depot bound 2
  EXPECT_EQ(cache.destroyed(), 2);
  // The exited thread's counts are kept: 1 miss, 2 hits.
  EXPECT_EQ(c.misses, 1u);
  EXPECT_EQ(c.hits, 2u);
  ExpectBalanced(cache, 0);
}

// A thread that fills its stack, then waits (alive) until told to use the
// cache again: a thread pool's idle worker.
class IdleWorker {
 public:
  IdleWorker(TestCache& cache, int items) : cache_(cache) {
    thread_ = std::thread([this, items] {
      std::vector<Item*> held;
      for (int i = 0; i < items; ++i) held.push_back(cache_.PopItem());
      for (Item* item : held) cache_.PushItem(item);
      Signal(1);
      Wait(2);
      // Used again after its stack was taken: refills and works.
      Item* item = cache_.PopItem();
      cache_.PushItem(item);
      Signal(3);
      Wait(4);
    });
    Wait(1);
  }
  void UseAgain() {
    Signal(2);
    Wait(3);
  }
  ~IdleWorker() {
    Signal(4);
    thread_.join();
  }

 private:
  void Signal(int step) {
    std::lock_guard<std::mutex> lock(mu_);
    step_ = step;
    cv_.notify_all();
  }
  void Wait(int step) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return step_ >= step; });
  }
  TestCache& cache_;
  std::mutex mu_;
  std::condition_variable cv_;
  int step_ = 0;
  std::thread thread_;
};

TEST(PointerCacheTest, ReleaseIdleTakesIdleThreadsStacks) {
  TestCache cache(8, 64);
  IdleWorker worker(cache, 3);  // pops 3 of a batch of 4, pushes them back
  EXPECT_EQ(cache.Stats().in_threads, 4u);
  // Not idle for an hour yet: kept.
  EXPECT_EQ(cache.ReleaseIdle(1h), 0u);
  EXPECT_EQ(cache.Stats().in_threads, 4u);
  // Idle for any time: the worker's stack is destroyed, not sent to the
  // depot.
  EXPECT_EQ(cache.ReleaseIdle(0ns), 4u);
  PointerCacheStats c = cache.Stats();
  EXPECT_EQ(c.in_threads, 0u);
  EXPECT_EQ(c.in_depot, 0u);
  EXPECT_EQ(cache.destroyed(), 4);
  worker.UseAgain();
  EXPECT_EQ(cache.Stats().in_threads, 4u);
  ExpectBalanced(cache, 0);
}

TEST(PointerCacheTest, ReleaseIdleCountsIdleTimeFromTheFirstCallThatSeesIt) {
  TestCache cache(8, 64);
  IdleWorker worker(cache, 1);
  std::this_thread::sleep_for(60ms);
  // Unchanged for 60 ms, but no call has seen it yet: idle from now.
  EXPECT_EQ(cache.ReleaseIdle(50ms), 0u);
  std::this_thread::sleep_for(60ms);
  EXPECT_EQ(cache.ReleaseIdle(50ms), 4u);
  worker.UseAgain();  // its stack changed: not idle
  EXPECT_EQ(cache.ReleaseIdle(50ms), 0u);
  EXPECT_EQ(cache.Stats().in_threads, 4u);
}

// A decay tick destroys the depot's items that waited through the whole
// period: the bottom of the depot, below the lowest it went since the last
// tick. Items that arrived during the period wait one more.
TEST(PointerCacheTest, DecayDestroysTheDepotItemsNoPopReachedSinceTheLastTick) {
  TestCache cache(4, 64, 1h);  // a period that never passes: ticks by hand
  std::vector<Item*> items;
  for (int i = 0; i < 6; ++i) items.push_back(cache.Foreign());
  for (Item* item : items) cache.PushItem(item);  // 4 stay, 2 to the depot
  cache.FlushThisThread();                        // all 6 in the depot
  ASSERT_EQ(cache.Stats().in_depot, 6u);
  // They arrived during this period: kept.
  EXPECT_EQ(cache.Decay(), 0u);
  EXPECT_EQ(cache.Stats().in_depot, 6u);
  // A Pop takes a batch of 2 from the top: 4 never reached. The 2 go back
  // on top of them.
  Item* a = cache.PopItem();
  cache.PushItem(a);
  EXPECT_EQ(cache.Stats().in_threads, 2u);
  cache.FlushThisThread();
  EXPECT_EQ(cache.Stats().in_depot, 6u);
  EXPECT_EQ(cache.Decay(), 4u);
  EXPECT_EQ(cache.destroyed(), 4);
  EXPECT_EQ(cache.Stats().in_depot, 2u);
  // The 2 used ones were kept, in order.
  Item* b = cache.PopItem();
  EXPECT_EQ(b, a);
  cache.PushItem(b);
  ExpectBalanced(cache, 0);
  // Back in the depot, they wait a whole period first.
  cache.FlushThisThread();
  EXPECT_EQ(cache.Decay(), 0u);
  EXPECT_EQ(cache.Decay(), 2u);
  EXPECT_EQ(cache.destroyed(), 6);
  ExpectBalanced(cache, 0);
}

TEST(PointerCacheTest, DecayReleasesStacksUnchangedForAPeriod) {
  TestCache cache(8, 64, 50ms);
  IdleWorker worker(cache, 1);  // a stack of 4, then idle
  // Seen unchanged from the first tick on (as ReleaseIdle counts).
  EXPECT_EQ(cache.Decay(), 0u);
  std::this_thread::sleep_for(60ms);
  EXPECT_EQ(cache.Decay(), 4u);
  EXPECT_EQ(cache.Stats().in_threads, 0u);
  worker.UseAgain();
  ExpectBalanced(cache, 0);
}

// Without a hand: Push() ticks once a period (checked on one push in 16).
TEST(PointerCacheTest, PushesTickTheDecayOncePerPeriod) {
  TestCache cache(4, 64, 200ms);
  for (int i = 0; i < 6; ++i) cache.PushItem(cache.Foreign());
  cache.FlushThisThread();
  ASSERT_EQ(cache.Stats().in_depot, 6u);
  cache.PushItem(cache.Foreign());  // one on this stack to cycle
  const auto cycle = [&] {
    for (int i = 0; i < 16; ++i) cache.PushItem(cache.PopItem());
  };
  std::this_thread::sleep_for(250ms);
  cycle();  // a tick: the depot's 6 arrived in its period
  EXPECT_EQ(cache.Stats().in_depot, 6u);
  cycle();  // within the next period: no tick
  EXPECT_EQ(cache.Stats().in_depot, 6u);
  std::this_thread::sleep_for(250ms);
  cycle();  // a tick: no Pop reached them for a period
  EXPECT_EQ(cache.Stats().in_depot, 0u);
  EXPECT_EQ(cache.destroyed(), 6);
  EXPECT_EQ(cache.Stats().in_threads, 1u);
  ExpectBalanced(cache, 0);
}

// No period: nothing decays, however long items wait.
TEST(PointerCacheTest, NoDecayWithoutAPeriod) {
  TestCache cache(4, 64);
  for (int i = 0; i < 6; ++i) cache.PushItem(cache.Foreign());
  cache.FlushThisThread();
  cache.PushItem(cache.Foreign());
  for (int round = 0; round < 2; ++round) {
    std::this_thread::sleep_for(5ms);
    for (int i = 0; i < 16; ++i) cache.PushItem(cache.PopItem());
  }
  EXPECT_EQ(cache.Stats().in_depot, 6u);
  EXPECT_EQ(cache.destroyed(), 0);
}

TEST(PointerCacheTest, ItemsPoppedOnOneThreadPushedOnAnother) {
  // Producers pop items and hand them over; consumers push them back. Each
  // item is out at most once at a time (checked in PopItem), nothing is
  // lost or destroyed twice, and the depot stays within its bound.
  constexpr int kPairs = 3;
  constexpr int kItemsPerProducer = 20000;
  constexpr size_t kDepot = 16;
  TestCache cache(8, kDepot);
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Item*> handoff;
  int producers_left = kPairs;
  std::atomic<size_t> max_depot{0};
  std::vector<std::thread> threads;
  for (int p = 0; p < kPairs; ++p) {
    threads.emplace_back([&] {
      for (int i = 0; i < kItemsPerProducer; ++i) {
        Item* item = cache.PopItem();
        std::lock_guard<std::mutex> lock(mu);
        handoff.push_back(item);
        cv.notify_one();
      }
      std::lock_guard<std::mutex> lock(mu);
      --producers_left;
      cv.notify_all();
    });
    threads.emplace_back([&] {
      for (;;) {
        Item* item;
        {
          std::unique_lock<std::mutex> lock(mu);
          cv.wait(lock,
                  [&] { return !handoff.empty() || producers_left == 0; });
          if (handoff.empty()) return;
          item = handoff.back();
          handoff.pop_back();
        }
        cache.PushItem(item);
        const size_t depot = cache.Stats().in_depot;
        size_t seen = max_depot.load();
        while (depot > seen && !max_depot.compare_exchange_weak(seen, depot)) {
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_LE(max_depot.load(), kDepot);
  const PointerCacheStats c = cache.Stats();
  EXPECT_EQ(c.in_threads, 0u);  // every worker exited
  EXPECT_LE(c.in_depot, kDepot);
  EXPECT_EQ(c.hits + c.misses, uint64_t{kPairs} * kItemsPerProducer);
  // Producers only pop and consumers only push: the items consumers'
  // stacks overflow reach the producers through the depot, or are
  // destroyed and made again; either way all are accounted for.
  ExpectBalanced(cache, 0);
}

// kThreads threads pop `held(t)` items and push them back, kRounds times,
// while `beside` runs on another thread until they are done.
template <class Held, class Beside>
void PopPushWhile(TestCache& cache, Held held, Beside beside) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 20000;
  std::atomic<bool> stop{false};
  std::thread other([&] {
    while (!stop.load()) {
      beside();
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<Item*> items(held(t));
      for (int r = 0; r < kRounds; ++r) {
        for (Item*& item : items) item = cache.PopItem();
        for (Item* item : items) cache.PushItem(item);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  stop.store(true);
  other.join();
  ExpectBalanced(cache, 0);
}

TEST(PointerCacheTest, ConcurrentPopPushReleaseIdleAndCounts) {
  // Threads pop and push while another releases idle stacks and reads the
  // counts: no item is handed out twice or destroyed while out.
  TestCache cache(8, 32);
  PopPushWhile(
      cache, [](int) { return 3; },
      [&] {
        cache.ReleaseIdle(0ns);
        EXPECT_LE(cache.Stats().in_depot, 32u);
      });
}

TEST(PointerCacheTest, ConcurrentPopPushWithDecayTicks) {
  // The same with a decay period of 1 ms: the ticks run inside the threads'
  // pushes (and by hand on another thread) while items move between stacks
  // and the depot (uneven counts per thread); none is handed out twice or
  // destroyed while out.
  TestCache cache(8, 32, 1ms);
  PopPushWhile(
      cache, [](int t) { return 1 + t * 3; }, [&] { cache.Decay(); });
}

// A tick destroys at most 64 (it runs on a caller's thread); the rest of
// what no Pop reached goes on the next ticks, without waiting a period.
TEST(PointerCacheTest, DecayTakesAtMost64ATick) {
  TestCache cache(4, 256, 1h);
  for (int i = 0; i < 100; ++i) cache.PushItem(cache.Foreign());
  cache.FlushThisThread();
  ASSERT_EQ(cache.Stats().in_depot, 100u);
  EXPECT_EQ(cache.Decay(), 0u);  // arrived in this period
  // 20 more arrive on top: they wait their own period.
  for (int i = 0; i < 20; ++i) cache.PushItem(cache.Foreign());
  cache.FlushThisThread();
  EXPECT_EQ(cache.Decay(), 64u);
  EXPECT_EQ(cache.Decay(), 36u);
  EXPECT_EQ(cache.Stats().in_depot, 20u);
  // That slice ended the old ones' decay, so the 20 are watched from it:
  // the next tick (a period later) takes them.
  EXPECT_EQ(cache.Decay(), 20u);
  EXPECT_EQ(cache.destroyed(), 120);
  ExpectBalanced(cache, 0);
}

TEST(PointerCacheTest, ShutdownDestroysEveryCachedItemOnce) {
  std::atomic<int64_t> destroyed{0};
  int64_t made = 0;
  {
    TestCache cache(4, 8);
    cache.CountDestroyedIn(&destroyed);
    std::thread t([&] { cache.PushItem(cache.Foreign()); });
    t.join();  // its item is in the depot
    for (int i = 0; i < 3; ++i) cache.PushItem(cache.Foreign());
    cache.PushItem(cache.PopItem());  // this thread's stack
    const PointerCacheStats c = cache.Stats();
    EXPECT_EQ(c.in_depot, 1u);
    EXPECT_EQ(c.in_threads, 3u);
    made = cache.made();
    EXPECT_EQ(destroyed.load(), 0);
  }
  EXPECT_EQ(made, 4);
  EXPECT_EQ(destroyed.load(), made);
}

}  // namespace
}  // namespace arenarpc::internal
