// SetGlobalArenaOptions before the first arena. One test in this binary, so
// it always runs in a fresh process.
#include <gtest/gtest.h>

#include "arenarpc/arena.h"
#include "arenarpc/page_pool.h"
#include "test_messages.pb.h"

namespace arenarpc {
namespace {

TEST(ArenaOptionsTest, OptionsSetAtStartUpAreInForce) {
  ArenaOptions bad;
  bad.pages.page_size = 5000;
  EXPECT_EQ(SetGlobalArenaOptions(bad).code(),
            absl::StatusCode::kInvalidArgument);

  ArenaOptions o;
  o.pages.page_size = 16 << 10;
  o.pages.depot_capacity_bytes = 1 << 20;
  o.pages.thread_cache_pages = 4;
  o.idle_arenas_per_thread = 1;
  o.idle_arenas_max = 2;
  ASSERT_TRUE(SetGlobalArenaOptions(o).ok());
  ASSERT_TRUE(SetGlobalArenaOptions(o).ok());  // repeatable before first use

  {
    ScopedArena arena;
    auto* leaf = arena.Create<test::Leaf>();
    leaf->set_text("x");
    EXPECT_EQ(arena.SpaceAllocated(), o.pages.page_size);
  }
  EXPECT_EQ(PagePool::Default().page_size(), o.pages.page_size);
  EXPECT_EQ(PagePool::Default().options().depot_capacity_bytes,
            o.pages.depot_capacity_bytes);

  // Idle arenas are bounded: 1 per thread + 2 shared.
  {
    std::vector<ScopedArena> many(10);
    for (auto& a : many) a.Create<test::Leaf>();
  }
  EXPECT_LE(GetArenaStats().arenas_idle, 3u);

  EXPECT_EQ(SetGlobalArenaOptions(o).code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace arenarpc
