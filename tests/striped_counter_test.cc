// StripedCounter on its own: exact sums once writers are quiet, monotone
// reads while they add, more threads than stripes, threads that exit.
// Label concurrency: run under TSan too.
#include "arenarpc/internal/striped_counter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace arenarpc::internal {
namespace {

TEST(StripedCounterTest, AddsAndSubtractsOnOneThread) {
  StripedCounter c;
  EXPECT_EQ(c.Sum(), 0);
  c.Add(5);
  c.Add(-2);
  EXPECT_EQ(c.Sum(), 3);
  c.Add(-10);
  EXPECT_EQ(c.Sum(), -7);  // may go below zero (callers clamp)
  c.Add(int64_t{1} << 40);
  EXPECT_EQ(c.Sum(), (int64_t{1} << 40) - 7);
}

TEST(StripedCounterTest, CountersAreIndependent) {
  StripedCounter a;
  StripedCounter b;
  a.Add(3);
  b.Add(-4);
  EXPECT_EQ(a.Sum(), 3);
  EXPECT_EQ(b.Sum(), -4);
}

TEST(StripedCounterTest, ExactSumAfterConcurrentAdds) {
  // More threads than stripes (16): threads share cells.
  constexpr int kThreads = 40;
  constexpr int kAdds = 20000;
  StripedCounter c;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&c, t] {
      for (int i = 0; i < kAdds; ++i) {
        c.Add(t + 1);
        if (i % 4 == 0) c.Add(-1);
      }
    });
  }
  for (std::thread& t : threads) t.join();  // the threads have exited too
  int64_t expected = 0;
  for (int t = 0; t < kThreads; ++t) {
    expected += int64_t{t + 1} * kAdds - kAdds / 4;
  }
  EXPECT_EQ(c.Sum(), expected);
}

TEST(StripedCounterTest, SumsReadWhileAddingAreMonotoneAndBounded) {
  // Only increments: each cell only grows, so a later Sum() is never
  // smaller than an earlier one, and never above the final total.
  constexpr int kThreads = 4;
  constexpr int kAdds = 50000;
  StripedCounter c;
  std::atomic<bool> done{false};
  int64_t decreases = 0;
  int64_t out_of_range = 0;
  const int64_t total = int64_t{kThreads} * kAdds;
  std::thread reader([&] {
    int64_t last = 0;
    do {
      const int64_t sum = c.Sum();
      if (sum < last) ++decreases;
      if (sum < 0 || sum > total) ++out_of_range;
      last = sum;
    } while (!done.load(std::memory_order_acquire));
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&c] {
      for (int i = 0; i < kAdds; ++i) c.Add(1);
    });
  }
  for (std::thread& t : writers) t.join();
  done.store(true, std::memory_order_release);
  reader.join();
  EXPECT_EQ(c.Sum(), total);
  EXPECT_EQ(decreases, 0);
  EXPECT_EQ(out_of_range, 0);
}

TEST(StripedCounterTest, BalancedAddsSumToZero) {
  // Acquire/release pairs split across threads, like in_use counts: +1 on
  // one thread, -1 on another.
  constexpr int kPairs = 4;
  constexpr int kOps = 30000;
  StripedCounter c;
  std::vector<std::thread> threads;
  for (int p = 0; p < kPairs; ++p) {
    threads.emplace_back([&c] {
      for (int i = 0; i < kOps; ++i) c.Add(1);
    });
    threads.emplace_back([&c] {
      for (int i = 0; i < kOps; ++i) c.Add(-1);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(c.Sum(), 0);
}

}  // namespace
}  // namespace arenarpc::internal
