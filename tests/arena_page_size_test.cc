// PagePool::ConfigureDefault() alone (no SetGlobalArenaOptions): arenas take
// their block size from the page pool, so no block misses the pool. One test
// in this binary, so it always runs in a fresh process.
#include <gtest/gtest.h>

#include "arenarpc/arena.h"
#include "arenarpc/page_pool.h"
#include "test_messages.pb.h"

namespace arenarpc {
namespace {

TEST(ArenaPageSizeTest, ArenasFollowThePagePoolsPageSize) {
  PagePoolOptions o;
  o.page_size = 16 << 10;  // not ArenaOptions' default (64 KiB)
  ASSERT_TRUE(PagePool::ConfigureDefault(o).ok());
  {
    ScopedArena arena;
    for (int i = 0; i < 2000; ++i) {  // a few pages of small objects
      arena.Create<test::Leaf>()->add_numbers(i);
    }
    EXPECT_GT(arena.SpaceAllocated(), 2 * o.page_size);
    EXPECT_EQ(arena.SpaceAllocated() % o.page_size, 0u);
    EXPECT_GT(PagePool::Default().Stats().pages_in_use, 0u);
  }
  // Before the fix every block went to malloc, counted as "oversize".
  EXPECT_EQ(GetArenaStats().blocks_from_heap, 0u);
  EXPECT_EQ(GetGlobalArenaOptions().pages.page_size, o.page_size);
}

}  // namespace
}  // namespace arenarpc
