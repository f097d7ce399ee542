// Many threads acquiring, parsing and returning, also across threads.
#include <gtest/gtest.h>

#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "arenarpc/message_pool.h"
#include "test_util.h"

namespace arenarpc {
namespace {

TEST(MessagePoolConcurrencyTest, ThreadsAcquireParseAndReturn) {
  // Record is a type Clear() cannot keep whole (`main`): reuse it anyway,
  // which is the path with state carried from use to use.
  MessagePoolOptions o;
  o.reuse_lossy_types = true;
  o.fresh_returns_at_start = 0;  // v24+: heap instances from the first use
  MessagePool<test::Record> pool(o);
  std::vector<std::string> wires;
  std::mt19937 rng(11);
  for (int i = 0; i < 32; ++i) {
    test::Record r;
    test::FillRecord(rng, 3, &r);
    wires.push_back(test::Deterministic(r));
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 400; ++i) {
        const std::string& wire = wires[(t * 7 + i) % wires.size()];
        auto m = pool.Acquire();
        ASSERT_EQ(m->ByteSizeLong(), 0u);
        ASSERT_TRUE(m.ParseFrom(wire));
        ASSERT_EQ(test::Deterministic(*m), wire);
      }
    });
  }
  for (auto& th : threads) th.join();
  const MessagePoolStats s = pool.Stats();
  EXPECT_EQ(s.acquisitions, 1600u);
  EXPECT_EQ(s.in_use, 0u);
  EXPECT_GT(s.reuse_hits, 1500u);
}

TEST(MessagePoolConcurrencyTest, HandlesReturnedOnAnotherThread) {
  MessagePool<test::Record> pool;  // default: a fresh arena per use
  std::mutex mu;
  std::deque<PooledMessage<test::Record>> queue;
  std::thread producer([&] {
    std::mt19937 rng(12);
    for (int i = 0; i < 500; ++i) {
      auto m = pool.Acquire();
      test::FillRecord(rng, 2, m.get());
      std::lock_guard<std::mutex> lock(mu);
      queue.push_back(std::move(m));
    }
  });
  int consumed = 0;
  while (consumed < 500) {
    PooledMessage<test::Record> m;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (queue.empty()) continue;
      m = std::move(queue.front());
      queue.pop_front();
    }
    ++consumed;
  }  // returned here, on this thread
  producer.join();
  const MessagePoolStats s = pool.Stats();
  EXPECT_EQ(s.in_use, 0u);
  EXPECT_LE(s.idle, MessagePoolOptions{}.idle_max +
                        2 * MessagePoolOptions{}.idle_per_thread);
}

}  // namespace
}  // namespace arenarpc
