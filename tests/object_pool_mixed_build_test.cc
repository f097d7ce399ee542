// ObjectPool used from code built with the opposite ARENARPC_DEBUG_CHECKS of
// the library's (CMake compiles this file with -DARENARPC_DEBUG_CHECKS=0 in a
// Debug build and =1 otherwise): a Release application linking a Debug
// arenarpc, or the other way round. Before the slot bitmap became a property
// of the library (FixedPool::has_bitmap_), a debug caller of an optimized
// library wrote bitmap words that did not exist, over live objects, and
// aborted with "slot handed out twice"; the RelWithDebInfo (TSan) build runs
// that half. (At -O0 the linker merges the inline hooks of both sides, so
// the Debug half passed either way; it guards against a regression.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "arenarpc/object_pool.h"

namespace arenarpc {
namespace {

struct Item {
  uint64_t words[4];
};

void Churn(ObjectPool<Item>& pool, uint64_t seed, int rounds) {
  std::vector<Item*> live;
  std::mt19937_64 rng(seed);
  for (int r = 0; r < rounds; ++r) {
    // More than two magazines' worth each way, so that slots travel through
    // the depot and the slow paths, then come back through the fast paths.
    for (int i = 0; i < 2000; ++i) {
      Item* it = pool.New();
      ASSERT_NE(it, nullptr);
      for (uint64_t& w : it->words) w = seed + i;
      live.push_back(it);
    }
    for (size_t i = 0; i < live.size(); ++i) {
      for (uint64_t w : live[i]->words) ASSERT_EQ(w, seed + i);
    }
    // Shuffled: slots come back in a new order through both paths.
    std::shuffle(live.begin(), live.end(), rng);
    for (Item* it : live) pool.Delete(it);
    live.clear();
  }
}

TEST(ObjectPoolMixedBuildTest, DebugStateAgreesAcrossTheLibraryBoundary) {
  ObjectPoolOptions options;
  options.magazine_size = 4;  // many exchanges with the depot
  ObjectPool<Item> pool(options);
  Churn(pool, 1, 20);
  EXPECT_EQ(pool.Stats().objects_in_use, 0u);
}

// Default(): the per-type thread cache and the lazily set-up pool are inline
// variables of the caller; the bitmap decision stays the library's.
TEST(ObjectPoolMixedBuildTest, DefaultPoolAcrossTheLibraryBoundary) {
  ObjectPool<Item>& pool = ObjectPool<Item>::Default();
  Churn(pool, 3, 5);
  std::thread t([&] { Churn(pool, 5, 5); });
  t.join();
  EXPECT_EQ(pool.Stats().objects_in_use, 0u);
}

TEST(ObjectPoolMixedBuildTest, CrossThreadFreesAcrossTheLibraryBoundary) {
  ObjectPoolOptions options;
  options.magazine_size = 4;
  ObjectPool<Item> pool(options);
  std::vector<Item*> made(20000);
  std::thread producer([&] {
    for (Item*& it : made) it = pool.New();
  });
  producer.join();
  std::thread consumer([&] {
    for (Item* it : made) pool.Delete(it);
  });
  consumer.join();
  std::thread a([&] { Churn(pool, 7, 10); });
  std::thread b([&] { Churn(pool, 9, 10); });
  a.join();
  b.join();
  EXPECT_EQ(pool.Stats().objects_in_use, 0u);
}

}  // namespace
}  // namespace arenarpc
