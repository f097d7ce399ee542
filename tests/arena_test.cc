#include "arenarpc/arena.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory_resource>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "arenarpc/internal/check.h"
#include "arenarpc/page_pool.h"
#include "test_util.h"

namespace arenarpc {
namespace {

using google::protobuf::util::MessageDifferencer;
using test::Leaf;
using test::Node;

TEST(ArenaTest, CreateUsesThePooledArena) {
  ScopedArena arena;
  ASSERT_NE(arena.arena(), nullptr);
  Node* node = arena.Create<Node>();
  EXPECT_EQ(node->GetArena(), arena.arena());
  node->set_name("x");
  EXPECT_GT(arena.SpaceAllocated(), 0u);
  // Blocks are pages of the default pool.
  EXPECT_EQ(arena.SpaceAllocated() % PagePool::Default().page_size(), 0u);
}

TEST(ArenaTest, ParseAndSerializeMatchHeap) {
  std::mt19937 rng(42);
  for (int i = 0; i < 50; ++i) {
    Node heap;
    test::FillNode(rng, 3, &heap);
    const std::string wire = test::Deterministic(heap);
    ScopedArena arena;
    Node* on_arena = arena.Create<Node>();
    ASSERT_TRUE(on_arena->ParseFromString(wire));
    EXPECT_TRUE(MessageDifferencer::Equals(heap, *on_arena));
    EXPECT_EQ(test::Deterministic(*on_arena), wire);
    // Built field by field on the arena, too.
    Node* copy = arena.Create<Node>();
    copy->CopyFrom(heap);
    EXPECT_EQ(test::Deterministic(*copy), wire);
  }
}

TEST(ArenaTest, OversizeAllocationFallsBackToTheHeap) {
  const ArenaStats before = GetArenaStats();
  const size_t page = PagePool::Default().page_size();
  std::string big(3 * page, 'z');
  {
    ScopedArena arena;
    Leaf* leaf = arena.Create<Leaf>();
    // A repeated field whose array alone is bigger than a page.
    for (size_t i = 0; i < page; ++i)
      leaf->add_numbers(static_cast<int64_t>(i));
    char* raw = static_cast<char*>(arena.arena()->AllocateAligned(2 * page));
    raw[0] = 'a';
    raw[2 * page - 1] = 'b';
    leaf->set_data(big);
    EXPECT_EQ(leaf->numbers(static_cast<int>(page) - 1),
              static_cast<int64_t>(page - 1));
    EXPECT_EQ(leaf->data(), big);
    EXPECT_EQ(raw[0], 'a');
    EXPECT_EQ(raw[2 * page - 1], 'b');
  }
  const ArenaStats after = GetArenaStats();
  EXPECT_GE(after.blocks_from_heap - before.blocks_from_heap, 1u);
  EXPECT_GE(after.bytes_from_heap - before.bytes_from_heap, 2 * page);
}

TEST(ArenaTest, ScopedArenaReturnsItsPages) {
  PagePool& pool = PagePool::Default();
  {
    ScopedArena warm;
    warm.Create<Node>();
  }  // the idle arena holds one page
  const uint64_t in_use_before = pool.Stats().pages_in_use;
  {
    ScopedArena arena;
    std::mt19937 rng(7);
    for (int i = 0; i < 40; ++i) test::FillNode(rng, 3, arena.Create<Node>());
    EXPECT_GT(pool.Stats().pages_in_use, in_use_before + 2);
  }
  EXPECT_EQ(pool.Stats().pages_in_use, in_use_before);
}

TEST(ArenaTest, ArenasAreReused) {
  { ScopedArena warm; }
  const ArenaStats before = GetArenaStats();
  google::protobuf::Arena* first;
  {
    ScopedArena a;
    first = a.arena();
  }
  {
    ScopedArena b;
    EXPECT_EQ(b.arena(), first);  // same object, reset
    EXPECT_EQ(b.arena()->SpaceUsed(), 0u);
  }
  const ArenaStats after = GetArenaStats();
  EXPECT_EQ(after.arenas_created, before.arenas_created);
  EXPECT_EQ(after.arenas_acquired - before.arenas_acquired, 2u);
}

TEST(ArenaTest, ReleaseIdleArenasDropsASleepingThreadsArenas) {
  std::atomic<int> phase{0};
  std::thread worker([&] {
    { ScopedArena a, b; }  // two idle arenas cached by this thread
    phase = 1;
    while (phase != 2) std::this_thread::yield();
    ScopedArena c;  // still works afterwards
    c.Create<test::Node>()->set_name("after");
  });
  while (phase != 1) std::this_thread::yield();
  ASSERT_GE(GetArenaStats().arenas_idle, 2u);
  EXPECT_GE(ReleaseIdleArenas(std::chrono::milliseconds(0)), 2u);
  EXPECT_EQ(GetArenaStats().arenas_idle, 0u);
  phase = 2;
  worker.join();
}

// An exited thread's idle arenas go to the shared list; idle_for zero
// drains it too (mutation check: the shared list was not covered).
TEST(ArenaTest, ReleaseIdleArenasZeroDrainsTheSharedList) {
  std::thread([] {
    std::vector<ScopedArena> many(10);  // more than a thread keeps
  }).join();
  ASSERT_GE(GetArenaStats().arenas_idle, 6u);
  EXPECT_GE(ReleaseIdleArenas(std::chrono::milliseconds(0)), 6u);
  EXPECT_EQ(GetArenaStats().arenas_idle, 0u);
}

TEST(ArenaTest, DestructorsOfNonMessagesRun) {
  int destroyed = 0;
  struct Probe {
    explicit Probe(int* d) : d(d) {}
    ~Probe() { ++*d; }
    int* d;
  };
  {
    ScopedArena arena;
    arena.Create<Probe>(&destroyed);
    arena.Create<Probe>(&destroyed);
    auto* s = arena.Create<std::string>(1000, 'q');
    EXPECT_EQ(s->size(), 1000u);
  }
  EXPECT_EQ(destroyed, 2);
}

TEST(ArenaTest, CloneToHeapSurvivesTheArena) {
  std::mt19937 rng(3);
  Node original;
  test::FillNode(rng, 3, &original);
  std::unique_ptr<Node> kept;
  std::unique_ptr<google::protobuf::Message> kept_dynamic;
  {
    ScopedArena arena;
    Node* node = arena.Create<Node>();
    node->CopyFrom(original);
    kept = CloneToHeap(*node);
    const google::protobuf::Message& as_base = *node;
    kept_dynamic = CloneToHeap(as_base);
  }
  // Overwrite the freed pages with junk.
  {
    ScopedArena arena;
    for (int i = 0; i < 20; ++i) test::FillNode(rng, 3, arena.Create<Node>());
  }
  EXPECT_EQ(kept->GetArena(), nullptr);
  EXPECT_TRUE(MessageDifferencer::Equals(*kept, original));
  EXPECT_TRUE(MessageDifferencer::Equals(*kept_dynamic, original));
}

TEST(ArenaTest, MemoryResourceSharesTheArena) {
  ScopedArena arena;
  std::pmr::vector<std::pmr::string> v(arena.memory_resource());
  for (int i = 0; i < 1000; ++i)
    v.emplace_back(100, static_cast<char>('a' + i % 26));
  EXPECT_EQ(std::string_view(v[999]),
            std::string(100, static_cast<char>('a' + 999 % 26)));
  EXPECT_GT(arena.arena()->SpaceUsed(), 1000u * 100u);
  auto* p = static_cast<char*>(arena.memory_resource()->allocate(10, 64));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  v.clear();  // containers must be destroyed before the arena resets
}

TEST(ArenaTest, MoveTransfersTheArena) {
  ScopedArena a;
  Node* n = a.Create<Node>();
  n->set_name("moved");
  google::protobuf::Arena* raw = a.arena();
  ScopedArena b(std::move(a));
  EXPECT_EQ(a.arena(), nullptr);
  EXPECT_EQ(b.arena(), raw);
  EXPECT_EQ(n->name(), "moved");
  ScopedArena c;
  c = std::move(b);
  EXPECT_EQ(c.arena(), raw);
  EXPECT_EQ(n->name(), "moved");
}

// The resource handed out before a move allocates on the moved arena: a
// container built on it keeps working in the arena's new owner, also after
// the moved-from ScopedArena is gone (ASan: no use-after-scope).
TEST(ArenaTest, MemoryResourceFollowsTheArenaWhenMoved) {
  std::optional<ScopedArena> a(std::in_place);
  std::pmr::memory_resource* resource = a->memory_resource();
  std::pmr::vector<std::pmr::string> v(resource);
  v.emplace_back(100, 'x');
  ScopedArena b(std::move(*a));
  a.reset();
  EXPECT_EQ(b.memory_resource(), resource);
  const uint64_t before = b.arena()->SpaceUsed();
  for (int i = 0; i < 100; ++i) v.emplace_back(100, 'y');
  EXPECT_GT(b.arena()->SpaceUsed(), before + 100u * 100u);
  ScopedArena c;
  c = std::move(b);
  EXPECT_EQ(c.memory_resource(), resource);
  v.emplace_back(100, 'z');
  EXPECT_EQ(std::string_view(v.back()), std::string(100, 'z'));
  v.clear();
  v.shrink_to_fit();
}

TEST(ArenaTest, OptionsCannotChangeOnceArenasAreInUse) {
  { ScopedArena arena; }
  const ArenaOptions before = GetGlobalArenaOptions();
  ArenaOptions o;
  o.pages.page_size = 2 * before.pages.page_size;
  const absl::Status s = SetGlobalArenaOptions(o);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_EQ(GetGlobalArenaOptions().pages.page_size, before.pages.page_size);
  EXPECT_EQ(PagePool::Default().page_size(), before.pages.page_size);
  // Arenas keep working with the old options.
  ScopedArena arena;
  arena.Create<Node>()->set_name("still fine");
}

#ifdef ARENARPC_ASAN
// A small arena: everything sits on the first page, which the idle arena
// keeps; what the scope put there is poisoned while the arena is idle.
TEST(ArenaDeathTest, UseAfterScopeIsCaughtByAsan) {
  EXPECT_DEATH(
      {
        Leaf* late = nullptr;
        {
          ScopedArena arena;
          late = arena.Create<Leaf>();
          late->add_numbers(1);
        }
        late->add_numbers(2);
      },
      "use-after-poison");
}

// Pages beyond the first go back to the (poisoned) page cache.
TEST(ArenaDeathTest, UseAfterScopeOnALaterPageIsCaughtByAsan) {
  EXPECT_DEATH(
      {
        Leaf* late = nullptr;
        {
          ScopedArena arena;
          std::mt19937 rng(1);
          while (arena.SpaceAllocated() < 4 * PagePool::Default().page_size()) {
            test::FillNode(rng, 2, arena.Create<Node>());
          }
          late = arena.Create<Leaf>();
        }
        late->add_numbers(1);
      },
      "use-after-poison");
}

// The poison is lifted when the arena is used again: no false reports.
TEST(ArenaTest, ReusedArenaIsNotPoisoned) {
  for (int i = 0; i < 3; ++i) {
    ScopedArena arena;
    Leaf* leaf = arena.Create<Leaf>();
    leaf->set_text(std::string(100, 'x'));
    for (int k = 0; k < 1000; ++k) leaf->add_numbers(k);
    EXPECT_FALSE(ARENARPC_IS_POISONED(leaf));
  }
}
#else
TEST(ArenaDeathTest, UseAfterScopeIsCaughtByAsan) {
  GTEST_SKIP() << "needs an AddressSanitizer build";
}
#endif

}  // namespace
}  // namespace arenarpc
