// The ARENARPC_DISABLE_ARENAS kill switch: same user code, heap objects.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "arenarpc/arena.h"
#include "test_util.h"

#ifndef ARENARPC_DISABLE_ARENAS
#error "this test must be built against arenarpc_disabled"
#endif

namespace arenarpc {
namespace {

TEST(ArenaDisabledTest, CreateAllocatesOnTheHeapAndScopeDeletes) {
  int destroyed = 0;
  struct Probe {
    explicit Probe(int* d) : d(d) {}
    ~Probe() { ++*d; }
    int* d;
  };
  {
    ScopedArena arena;
    EXPECT_EQ(arena.arena(), nullptr);
    test::Node* node = arena.Create<test::Node>();
    EXPECT_EQ(node->GetArena(), nullptr);
    std::mt19937 rng(5);
    test::FillNode(rng, 2, node);
    const std::string wire = test::Deterministic(*node);
    test::Node parsed;
    ASSERT_TRUE(parsed.ParseFromString(wire));
    EXPECT_EQ(test::Deterministic(parsed), wire);
    arena.Create<Probe>(&destroyed);
    std::pmr::vector<int> v(arena.memory_resource());
    v.assign(100, 7);
    EXPECT_EQ(v[99], 7);
    EXPECT_EQ(arena.SpaceAllocated(), 0u);
  }
  EXPECT_EQ(destroyed, 1);  // LeakSanitizer checks the messages were deleted
}

TEST(ArenaDisabledTest, MoveKeepsOwnership) {
  int destroyed = 0;
  struct Probe {
    explicit Probe(int* d) : d(d) {}
    ~Probe() { ++*d; }
    int* d;
  };
  {
    ScopedArena a;
    a.Create<Probe>(&destroyed);
    ScopedArena b(std::move(a));
    EXPECT_EQ(destroyed, 0);
  }
  EXPECT_EQ(destroyed, 1);
}

// Create() from several threads, as a real arena allows: the heap objects'
// owner list is locked (it used not to be).
TEST(ArenaDisabledTest, CreateFromSeveralThreads) {
  std::atomic<int> destroyed{0};
  struct Probe {
    explicit Probe(std::atomic<int>* d) : d(d) {}
    ~Probe() { d->fetch_add(1); }
    std::atomic<int>* d;
  };
  constexpr int kThreads = 4;
  constexpr int kEach = 5000;
  {
    ScopedArena arena;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < kEach; ++i) {
          arena.Create<Probe>(&destroyed);
          arena.Create<std::string>(64, 'x');
        }
      });
    }
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(destroyed.load(), 0);
  }
  EXPECT_EQ(destroyed.load(), kThreads * kEach);
}

}  // namespace
}  // namespace arenarpc
