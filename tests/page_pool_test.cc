#include "arenarpc/page_pool.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "arenarpc/internal/check.h"

namespace arenarpc {
namespace {

PagePoolOptions SmallPool() {
  PagePoolOptions o;
  o.page_size = 16 << 10;
  o.depot_capacity_bytes = 8 * o.page_size;  // 8 pages
  o.thread_cache_pages = 4;
  return o;
}

TEST(PagePoolTest, PagesAreDistinctAndWritable) {
  PagePool pool(SmallPool());
  std::vector<void*> pages;
  std::set<void*> seen;
  for (int i = 0; i < 100; ++i) {
    void* p = pool.Allocate();
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(seen.insert(p).second) << "page handed out twice";
    std::memset(p, i, pool.page_size());
    pages.push_back(p);
  }
  // No page overlaps another: each still holds its own fill byte throughout.
  for (int i = 0; i < 100; ++i) {
    auto* bytes = static_cast<unsigned char*>(pages[i]);
    EXPECT_EQ(bytes[0], static_cast<unsigned char>(i));
    EXPECT_EQ(bytes[pool.page_size() - 1], static_cast<unsigned char>(i));
  }
  EXPECT_EQ(pool.Stats().pages_in_use, 100u);
  for (void* p : pages) pool.Deallocate(p);
  EXPECT_EQ(pool.Stats().pages_in_use, 0u);
}

TEST(PagePoolTest, ReusesReturnedPagesLifo) {
  PagePool pool(SmallPool());
  void* a = pool.Allocate();
  pool.Deallocate(a);
  EXPECT_EQ(pool.Allocate(), a);  // the hottest page comes back first
  pool.Deallocate(a);
  const PagePoolStats s = pool.Stats();
  EXPECT_EQ(s.cache_hits, 1u);
  EXPECT_EQ(s.cache_misses, 1u);
}

TEST(PagePoolTest, DepotCapIsRespected) {
  const PagePoolOptions o = SmallPool();
  PagePool pool(o);
  std::vector<void*> pages;
  for (int i = 0; i < 64; ++i) pages.push_back(pool.Allocate());
  for (void* p : pages) pool.Deallocate(p);
  const PagePoolStats s = pool.Stats();
  EXPECT_EQ(s.pages_in_use, 0u);
  EXPECT_LE(s.pages_in_depot, o.depot_capacity_bytes / o.page_size);
  EXPECT_LE(s.pages_cached,
            o.depot_capacity_bytes / o.page_size + o.thread_cache_pages);
  // Everything beyond the cap went back to the OS.
  EXPECT_EQ(s.os_pages_allocated - s.os_pages_released, s.pages_cached);
  EXPECT_GE(s.os_pages_released, 64u - 8 - 4);
  EXPECT_LE(s.bytes_held(),
            o.depot_capacity_bytes + o.thread_cache_pages * o.page_size);
}

TEST(PagePoolTest, ZeroDepotReturnsEverythingBeyondTheThreadCache) {
  PagePoolOptions o = SmallPool();
  o.depot_capacity_bytes = 0;
  PagePool pool(o);
  std::vector<void*> pages;
  for (int i = 0; i < 32; ++i) pages.push_back(pool.Allocate());
  for (void* p : pages) pool.Deallocate(p);
  EXPECT_LE(pool.Stats().pages_cached, o.thread_cache_pages);
  pool.FlushThreadCache();
  const PagePoolStats s = pool.Stats();
  EXPECT_EQ(s.pages_cached, 0u);
  EXPECT_EQ(s.os_pages_allocated, s.os_pages_released);
}

TEST(PagePoolTest, ThreadExitReturnsItsPages) {
  PagePool pool(SmallPool());
  std::thread t([&] {
    std::vector<void*> pages;
    for (int i = 0; i < 3; ++i) pages.push_back(pool.Allocate());
    for (void* p : pages) pool.Deallocate(p);
    EXPECT_EQ(pool.Stats().pages_in_depot, 0u);  // still in t's cache
  });
  t.join();
  const PagePoolStats s = pool.Stats();
  EXPECT_EQ(s.pages_in_use, 0u);
  // The thread mapped a batch (half its cache); all of it is in the depot.
  EXPECT_EQ(s.pages_in_depot, s.os_pages_allocated - s.os_pages_released);
  EXPECT_GE(s.pages_in_depot, 2u);
  // The counters of the exited thread are kept.
  EXPECT_EQ(s.cache_hits + s.cache_misses, 3u);
}

TEST(PagePoolTest, ReleaseIdleCachesUnmapsTheCacheOfASleepingThread) {
  PagePoolOptions o = SmallPool();
  o.depot_capacity_bytes = 0;  // nothing parked outside thread caches
  o.thread_cache_pages = 8;
  PagePool pool(o);
  std::mutex mu;
  std::condition_variable cv;
  int phase = 0;  // 1: the worker filled its cache; 2: wake up
  std::thread worker([&] {
    std::vector<void*> pages;
    for (int i = 0; i < 8; ++i) pages.push_back(pool.Allocate());
    for (void* p : pages) pool.Deallocate(p);
    std::unique_lock<std::mutex> lock(mu);
    phase = 1;
    cv.notify_all();
    cv.wait(lock, [&] { return phase == 2; });
    lock.unlock();
    // Still works after its cache was taken from under it.
    pages.clear();
    for (int i = 0; i < 10; ++i) {
      auto* p = static_cast<char*>(pool.Allocate());
      ASSERT_NE(p, nullptr);
      std::memset(p, i, pool.page_size());
      pages.push_back(p);
    }
    for (void* p : pages) pool.Deallocate(p);
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return phase == 1; });
  }
  // This thread's own cache stays busy: used between the calls.
  pool.Deallocate(pool.Allocate());
  const uint64_t mine = pool.Stats().pages_cached - 8;  // a refill batch
  ASSERT_GT(mine, 0u);
  const size_t held = pool.Stats().bytes_held();
  // First sight of the worker's full cache: not idle for 50 ms yet.
  EXPECT_EQ(pool.ReleaseIdleCaches(std::chrono::milliseconds(50)), 0u);
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  pool.Deallocate(pool.Allocate());
  const size_t released = pool.ReleaseIdleCaches(std::chrono::milliseconds(50));
  EXPECT_EQ(released, 8 * pool.page_size());
  PagePoolStats s = pool.Stats();
  EXPECT_EQ(s.pages_cached, mine);  // this thread's, used meanwhile
  EXPECT_EQ(s.bytes_held(), held - released);
  EXPECT_EQ(s.os_pages_released, 8u);
  // Zero: every cache not in use now, this thread's too.
  EXPECT_EQ(pool.ReleaseIdleCaches(std::chrono::milliseconds(0)),
            mine * pool.page_size());
  EXPECT_EQ(pool.Stats().bytes_held(), 0u);
  {
    std::lock_guard<std::mutex> lock(mu);
    phase = 2;
  }
  cv.notify_all();
  worker.join();
  s = pool.Stats();
  EXPECT_EQ(s.pages_in_use, 0u);
  pool.Deallocate(pool.Allocate());  // and this thread still works
}

TEST(PagePoolTest, TrimReturnsTheDepotToTheOs) {
  PagePool pool(SmallPool());
  std::vector<void*> pages;
  for (int i = 0; i < 12; ++i) pages.push_back(pool.Allocate());
  for (void* p : pages) pool.Deallocate(p);
  pool.FlushThreadCache();
  EXPECT_GT(pool.Stats().pages_in_depot, 0u);
  pool.Trim();
  const PagePoolStats s = pool.Stats();
  EXPECT_EQ(s.pages_in_depot, 0u);
  EXPECT_EQ(s.bytes_held(), 0u);
}

TEST(PagePoolTest, CrossThreadReturn) {
  PagePool pool(SmallPool());
  std::vector<void*> pages;
  for (int i = 0; i < 20; ++i) pages.push_back(pool.Allocate());
  std::thread t([&] {
    for (void* p : pages) pool.Deallocate(p);
  });
  t.join();
  EXPECT_EQ(pool.Stats().pages_in_use, 0u);
}

TEST(PagePoolTest, ValidateRejectsBadOptions) {
  PagePoolOptions o;
  o.page_size = 3000;
  EXPECT_EQ(PagePool::Validate(o).code(), absl::StatusCode::kInvalidArgument);
  o.page_size = 1024;  // below the OS page
  EXPECT_EQ(PagePool::Validate(o).code(), absl::StatusCode::kInvalidArgument);
  o.page_size = 1 << 16;
  o.thread_cache_pages = 0;
  EXPECT_EQ(PagePool::Validate(o).code(), absl::StatusCode::kInvalidArgument);
  o.thread_cache_pages = 8;
  EXPECT_TRUE(PagePool::Validate(o).ok());
}

TEST(PagePoolDeathTest, InvalidOptionsAbortTheConstructor) {
  PagePoolOptions o;
  o.page_size = 12345;
  EXPECT_DEATH(PagePool pool(o), "invalid options");
}

#if ARENARPC_DEBUG_CHECKS || defined(ARENARPC_ASAN)
TEST(PagePoolDeathTest, DoubleReturnIsCaught) {
  EXPECT_DEATH(
      {
        PagePool pool(SmallPool());
        void* p = pool.Allocate();
        pool.Deallocate(p);
        pool.Deallocate(p);
      },
      "returned twice");
}
#endif

#if ARENARPC_DEBUG_CHECKS
TEST(PagePoolDeathTest, WrongPoolIsCaught) {
  EXPECT_DEATH(
      {
        PagePool a(SmallPool());
        PagePool b(SmallPool());
        b.Deallocate(a.Allocate());
      },
      "not from this pool");
}

TEST(PagePoolDeathTest, DestroyedWithPagesOutIsCaught) {
  EXPECT_DEATH(
      {
        auto* pool = new PagePool(SmallPool());
        (void)pool->Allocate();
        delete pool;
      },
      "PagePool destroyed while pages are still in use");
}

TEST(PagePoolDeathTest, ForeignMemoryIsCaught) {
  EXPECT_DEATH(
      {
        PagePool pool(SmallPool());
        static char not_a_page[1 << 14];
        pool.Deallocate(not_a_page);
      },
      "not from this pool");
}
#endif

#ifdef ARENARPC_ASAN
TEST(PagePoolDeathTest, UseAfterReturnIsCaughtByAsan) {
  EXPECT_DEATH(
      {
        PagePool pool(SmallPool());
        auto* p = static_cast<volatile char*>(pool.Allocate());
        p[100] = 1;
        pool.Deallocate(const_cast<char*>(p));
        p[100] = 2;  // the page is in the cache: poisoned
      },
      "use-after-poison");
}
#else
TEST(PagePoolDeathTest, UseAfterReturnIsCaughtByAsan) {
  GTEST_SKIP() << "needs an AddressSanitizer build";
}
#endif

TEST(PagePoolTest, DefaultIsConfiguredOnlyBeforeFirstUse) {
  PagePool& pool = PagePool::Default();
  EXPECT_GE(pool.page_size(), 4096u);
  PagePoolOptions o;
  const absl::Status s = PagePool::ConfigureDefault(o);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_EQ(&PagePool::Default(), &pool);
}

}  // namespace
}  // namespace arenarpc
