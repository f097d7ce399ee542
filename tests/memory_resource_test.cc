#include "arenarpc/memory_resource.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory_resource>
#include <string>
#include <string_view>
#include <vector>

#include "arenarpc/page_pool.h"

namespace arenarpc {
namespace {

PagePoolOptions Options() {
  PagePoolOptions o;
  o.page_size = 8192;
  o.depot_capacity_bytes = 1 << 20;
  o.thread_cache_pages = 4;
  return o;
}

TEST(MonotonicPageResourceTest, ContainersLiveOnPoolPages) {
  PagePool pool(Options());
  {
    MonotonicPageResource resource(pool);
    std::pmr::vector<std::pmr::string> v(&resource);
    for (int i = 0; i < 500; ++i)
      v.emplace_back(50, static_cast<char>('a' + i % 26));
    for (int i = 0; i < 500; ++i)
      ASSERT_EQ(std::string_view(v[i]),
                std::string(50, static_cast<char>('a' + i % 26)));
    EXPECT_GT(resource.pages_held(), 2u);
    EXPECT_EQ(pool.Stats().pages_in_use, resource.pages_held());
  }
  EXPECT_EQ(pool.Stats().pages_in_use, 0u);
}

TEST(MonotonicPageResourceTest, AlignmentAndLargeRequests) {
  PagePool pool(Options());
  MonotonicPageResource resource(pool);
  for (size_t align : {1, 2, 8, 16, 64, 256, 4096}) {
    void* p = resource.allocate(24, align);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % align, 0u) << align;
    std::memset(p, 1, 24);
  }
  // Larger than half a page: from the heap, freed by release().
  auto* big = static_cast<char*>(resource.allocate(100000, 128));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big) % 128, 0u);
  std::memset(big, 2, 100000);
  resource.release();
  EXPECT_EQ(resource.pages_held(), 0u);
  EXPECT_EQ(pool.Stats().pages_in_use, 0u);
  // Usable again after release().
  std::memset(resource.allocate(100, 8), 3, 100);
  EXPECT_EQ(resource.pages_held(), 1u);
}

// Larger than half a page: the heap, never a page of its own (the header's
// rule; a request between half and a whole page would otherwise waste the
// rest of a page).
TEST(MonotonicPageResourceTest, OverHalfAPageGoesToTheHeap) {
  PagePool pool(Options());
  MonotonicPageResource resource(pool);
  void* p = resource.allocate(pool.page_size() * 3 / 4, 8);
  std::memset(p, 1, pool.page_size() * 3 / 4);
  EXPECT_EQ(resource.pages_held(), 0u);
  EXPECT_EQ(pool.Stats().pages_in_use, 0u);
  EXPECT_NE(resource.allocate(pool.page_size() / 4, 8), nullptr);  // a page
  EXPECT_EQ(resource.pages_held(), 1u);
}

TEST(MonotonicPageResourceTest, EqualityIsIdentity) {
  PagePool pool(Options());
  MonotonicPageResource a(pool), b(pool);
  EXPECT_TRUE(a.is_equal(a));
  EXPECT_FALSE(a.is_equal(b));
}

}  // namespace
}  // namespace arenarpc
