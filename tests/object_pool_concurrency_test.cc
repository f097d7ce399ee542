// ObjectPool on many threads, objects handed between threads. Run under TSan.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "arenarpc/object_pool.h"

namespace arenarpc {
namespace {

struct Item {
  explicit Item(uint64_t v) : value(v), check(~v) {}
  ~Item() { value = check = 0; }
  uint64_t value;
  uint64_t check;
  char pad[48];
};

bool Intact(const Item* p, uint64_t v) {
  return p->value == v && p->check == ~v;
}

TEST(ObjectPoolConcurrencyTest, ThreadsCreateAndDeleteLocally) {
  ObjectPool<Item> pool;
  constexpr int kThreads = 8;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&pool, t] {
      std::mt19937 rng(t);
      std::vector<std::pair<Item*, uint64_t>> mine;
      for (int step = 0; step < 40000; ++step) {
        if (mine.empty() || rng() % 2) {
          const uint64_t v = (uint64_t{static_cast<uint32_t>(t)} << 32) | step;
          mine.emplace_back(pool.New(v), v);
        } else {
          const size_t i = rng() % mine.size();
          // Nobody else wrote to an object while we held it.
          ASSERT_TRUE(Intact(mine[i].first, mine[i].second));
          pool.Delete(mine[i].first);
          mine[i] = mine.back();
          mine.pop_back();
        }
      }
      for (auto& [p, v] : mine) {
        ASSERT_TRUE(Intact(p, v));
        pool.Delete(p);
      }
    });
  }
  // Stats() from a metrics thread while the workers run.
  std::atomic<bool> stop{false};
  std::thread scraper([&] {
    while (!stop) {
      const ObjectPoolStats s = pool.Stats();
      ASSERT_LE(s.objects_in_depot, s.objects_cached);
      std::this_thread::yield();
    }
  });
  for (auto& th : threads) th.join();
  stop = true;
  scraper.join();
  const ObjectPoolStats s = pool.Stats();
  EXPECT_EQ(s.objects_in_use, 0u);
  // Every worker exited: their caches are all in the depot.
  EXPECT_EQ(s.objects_cached, s.objects_in_depot);
  pool.Trim();
  EXPECT_EQ(pool.Stats().blocks_held, 0u);
}

// Hands batches of objects from one thread to another through a queue that
// holds at most `capacity` objects.
class BoundedQueue {
 public:
  explicit BoundedQueue(size_t capacity) : capacity_(capacity) {}
  void Push(std::vector<Item*> batch) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return size_ + batch.size() <= capacity_; });
    size_ += batch.size();
    batches_.push_back(std::move(batch));
    cv_.notify_all();
  }
  // An empty batch means the producer is done.
  std::vector<Item*> Pop() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !batches_.empty(); });
    std::vector<Item*> batch = std::move(batches_.front());
    batches_.pop_front();
    size_ -= batch.size();
    cv_.notify_all();
    return batch;
  }

 private:
  const size_t capacity_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::vector<Item*>> batches_;
  size_t size_ = 0;
};

// The classic failure of naive thread-caching pools: the consumers' freed
// objects pile up in their caches (or lists only they allocate from) while
// the producers keep carving new memory. Here memory must stay bounded by
// what is in flight plus the caches, no matter how many objects pass through.
// `pool` hands out T (Item, or a tagged copy for a Default() of its own).
template <class T>
void ProducersAndConsumersStayBounded(ObjectPool<T>& pool, int producers,
                                      int consumers) {
  constexpr uint64_t kObjects = 1'000'000;
  constexpr size_t kBatch = 64;
  constexpr size_t kInFlight = 4096;
  BoundedQueue queue(kInFlight);
  std::atomic<uint64_t> max_blocks{0};
  std::atomic<uint64_t> consumed{0};
  auto sample = [&] {
    const uint64_t b = pool.Stats().blocks_held;
    uint64_t m = max_blocks.load();
    while (b > m && !max_blocks.compare_exchange_weak(m, b)) {
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < producers; ++t) {
    threads.emplace_back([&, t] {
      std::vector<Item*> batch;
      for (uint64_t i = t; i < kObjects; i += producers) {
        batch.push_back(pool.New(i));
        if (batch.size() == kBatch) {
          queue.Push(std::move(batch));
          batch.clear();
          if (i % (kBatch * 16) < static_cast<uint64_t>(producers)) sample();
        }
      }
      if (!batch.empty()) queue.Push(std::move(batch));
    });
  }
  for (int t = 0; t < consumers; ++t) {
    threads.emplace_back([&] {
      for (;;) {
        std::vector<Item*> batch = queue.Pop();
        if (batch.empty()) break;
        for (Item* p : batch) {
          ASSERT_TRUE(Intact(p, p->value)) << p->value;
          pool.Delete(static_cast<T*>(p));
        }
        consumed += batch.size();
      }
    });
  }
  for (int t = 0; t < producers; ++t) threads[t].join();
  for (int t = 0; t < consumers; ++t) queue.Push({});  // one end marker each
  for (auto& t : threads) {
    if (t.joinable()) t.join();
  }
  sample();
  EXPECT_EQ(consumed.load(), kObjects);
  // In flight (the queue + one batch in each thread's hands) plus two
  // magazines per thread plus one magazine being carved per producer.
  const uint64_t threads_n = producers + consumers;
  const uint64_t bound_objects =
      kInFlight + threads_n * kBatch + threads_n * 2 * 256 + producers * 256;
  const uint64_t bound_blocks = (bound_objects + pool.objects_per_block() - 1) /
                                    pool.objects_per_block() +
                                1;
  EXPECT_LE(max_blocks.load(), bound_blocks)
      << "memory grew with the number of objects passed: " << max_blocks
      << " blocks of " << pool.objects_per_block() << " objects";
  EXPECT_EQ(pool.Stats().objects_in_use, 0u);
  // Without reuse across threads this would have needed this many blocks.
  EXPECT_LT(bound_blocks * 10, kObjects / pool.objects_per_block());
}

TEST(ObjectPoolConcurrencyTest, ProducerConsumerStaysBounded) {
  ObjectPool<Item> pool;
  ProducersAndConsumersStayBounded(pool, 1, 1);
}

// Default(): the per-type thread caches go through the same depot.
template <int kTag>
struct DefaultItem : Item {
  using Item::Item;
};

TEST(ObjectPoolConcurrencyTest, DefaultProducerConsumerStaysBounded) {
  ProducersAndConsumersStayBounded(ObjectPool<DefaultItem<1>>::Default(), 1, 1);
}

TEST(ObjectPoolConcurrencyTest, DefaultOneProducerFourConsumers) {
  ProducersAndConsumersStayBounded(ObjectPool<DefaultItem<2>>::Default(), 1, 4);
}

TEST(ObjectPoolConcurrencyTest, DefaultFourProducersOneConsumer) {
  ProducersAndConsumersStayBounded(ObjectPool<DefaultItem<3>>::Default(), 4, 1);
}

TEST(ObjectPoolConcurrencyTest, ObjectsDeletedByOtherThreads) {
  ObjectPool<Item> pool;
  constexpr int kThreads = 6;
  constexpr int kPerThread = 20000;
  // Each thread creates objects and publishes them; the next thread in the
  // ring deletes them.
  std::vector<std::vector<Item*>> made(kThreads);
  std::atomic<int> created{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        made[t].push_back(
            pool.New(uint64_t{static_cast<uint32_t>(t)} * kPerThread + i));
      }
      created.fetch_add(1);
      while (created.load() < kThreads) std::this_thread::yield();
      const int from = (t + 1) % kThreads;
      for (int i = 0; i < kPerThread; ++i) {
        ASSERT_TRUE(
            Intact(made[from][i],
                   uint64_t{static_cast<uint32_t>(from)} * kPerThread + i));
        pool.Delete(made[from][i]);
      }
      // And reuse: objects freed here came from another thread's blocks.
      std::vector<Item*> again;
      for (int i = 0; i < kPerThread; ++i)
        again.push_back(pool.New(uint64_t(i)));
      for (int i = 0; i < kPerThread; ++i) {
        ASSERT_TRUE(Intact(again[i], i));
        pool.Delete(again[i]);
      }
    });
  }
  for (auto& th : threads) th.join();
  const ObjectPoolStats s = pool.Stats();
  EXPECT_EQ(s.objects_in_use, 0u);
  EXPECT_EQ(s.objects_cached, s.objects_in_depot);
  // The second round reused the first round's memory.
  EXPECT_LE(
      s.blocks_held * pool.objects_per_block(),
      uint64_t{kThreads} * (kPerThread + 2 * 512) + pool.objects_per_block());
}

template <class T>
void ShortLivedThreadsAndTrim(ObjectPool<T>& pool) {
  std::vector<std::pair<Item*, uint64_t>> survivors;
  std::mutex mu;
  for (int wave = 0; wave < 10; ++wave) {
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        std::vector<T*> v;
        for (int i = 0; i < 3000; ++i) v.push_back(pool.New(uint64_t(i)));
        std::lock_guard<std::mutex> lock(mu);
        survivors.emplace_back(v[t], t);  // one object outlives the thread
        for (int i = 0; i < 3000; ++i) {
          if (i != t) pool.Delete(v[i]);
        }
      });
    }
    // Trim races with the threads' exit hooks and with their work.
    pool.Trim();
    for (auto& th : threads) th.join();
  }
  EXPECT_EQ(pool.Stats().objects_in_use, survivors.size());
  pool.Trim();
  // The survivors pin at most their own blocks.
  EXPECT_LE(pool.Stats().blocks_held, survivors.size());
  for (size_t i = 0; i < survivors.size(); ++i) {
    EXPECT_TRUE(Intact(survivors[i].first, survivors[i].second));
  }
  for (auto& [p, v] : survivors) pool.Delete(static_cast<T*>(p));
  pool.Trim();
  EXPECT_EQ(pool.Stats().blocks_held, 0u);
}

TEST(ObjectPoolConcurrencyTest, ShortLivedThreadsAndTrim) {
  ObjectPool<Item> pool;
  ShortLivedThreadsAndTrim(pool);
}

// Also the first use of Default() (its set-up) racing from several threads.
TEST(ObjectPoolConcurrencyTest, DefaultShortLivedThreadsAndTrim) {
  ShortLivedThreadsAndTrim(ObjectPool<DefaultItem<4>>::Default());
}

TEST(ObjectPoolConcurrencyTest, PoolDestroyedBeforeItsThreadsExit) {
  std::atomic<int> phase{0};
  auto pool = std::make_unique<ObjectPool<Item>>();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) pool->Delete(pool->New(uint64_t(i)));
      phase.fetch_add(1);
      while (phase.load() < 5) std::this_thread::yield();
      // The pool is gone; a new one must not see the old caches.
      ObjectPool<Item> fresh;
      Item* p = fresh.New(1);
      EXPECT_EQ(fresh.Stats().objects_in_use, 1u);
      fresh.Delete(p);
    });
  }
  while (phase.load() < 4) std::this_thread::yield();
  pool.reset();  // the threads still hold caches in it
  phase.store(5);
  for (auto& th : threads) th.join();  // their exit must not touch it
}

}  // namespace
}  // namespace arenarpc
