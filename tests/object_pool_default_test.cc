// ObjectPool<T>::Default(): the per-type pool with its per-type thread caches.
// Each test uses its own T, so that the process-wide pools do not mix.
#include <errno.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include "arenarpc/internal/check.h"
#include "arenarpc/object_pool.h"

namespace arenarpc {
namespace {

template <int kTag>
struct Item {
  uint64_t words[8];  // 64 bytes, like the benchmark's objects
  explicit Item(uint64_t seed = 0) {
    for (int i = 0; i < 8; ++i) words[i] = seed * 8 + i;
  }
  bool Holds(uint64_t seed) const {
    for (int i = 0; i < 8; ++i) {
      if (words[i] != seed * 8 + i) return false;
    }
    return true;
  }
};

bool Unmapped(const void* p) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  void* start =
      reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) & ~(page - 1));
  unsigned char vec = 0;
  return mincore(start, page, &vec) != 0 && errno == ENOMEM;
}

// Used from a static initialiser: Default() needs no construction order.
using Early = Item<100>;
Early* const early_object = ObjectPool<Early>::Default().New(uint64_t{5});

TEST(ObjectPoolDefaultTest, UsableFromStaticInitialisers) {
  ASSERT_NE(early_object, nullptr);
  EXPECT_TRUE(early_object->Holds(5));
  EXPECT_EQ(ObjectPool<Early>::Default().Stats().objects_in_use, 1u);
}

TEST(ObjectPoolDefaultTest, OnePoolPerTypeWithDistinctLiveObjects) {
  using T = Item<1>;
  EXPECT_EQ(&ObjectPool<T>::Default(), &ObjectPool<T>::Default());
  EXPECT_NE(static_cast<void*>(&ObjectPool<T>::Default()),
            static_cast<void*>(&ObjectPool<Item<2>>::Default()));
  auto& pool = ObjectPool<T>::Default();
  // Untouched: stats are zero and nothing is mapped.
  EXPECT_EQ(pool.Stats().blocks_held, 0u);
  EXPECT_EQ(pool.Trim(), 0u);
  std::vector<T*> v;
  std::set<T*> seen;
  for (int i = 0; i < 3000; ++i) {
    v.push_back(pool.New(uint64_t(i)));
    EXPECT_TRUE(seen.insert(v.back()).second);
  }
  for (int i = 0; i < 3000; ++i) ASSERT_TRUE(v[i]->Holds(i));
  EXPECT_EQ(pool.Stats().objects_in_use, 3000u);
  EXPECT_EQ(pool.Stats().object_stride, sizeof(T));
  for (T* p : v) pool.Delete(p);
  EXPECT_EQ(pool.Stats().objects_in_use, 0u);
  // Reuse: the hottest object comes back first, no new block.
  const uint64_t blocks = pool.Stats().blocks_held;
  T* a = pool.New();
  pool.Delete(a);
  EXPECT_EQ(pool.New(), a);
  pool.Delete(a);
  EXPECT_EQ(pool.Stats().blocks_held, blocks);
}

TEST(ObjectPoolDefaultTest, AnyThreadDeletes) {
  using T = Item<3>;
  auto& pool = ObjectPool<T>::Default();
  constexpr int kN = 5000;  // several magazines: the depot carries them over
  std::vector<T*> v;
  for (int i = 0; i < kN; ++i) v.push_back(pool.New(uint64_t(i)));
  std::thread other([&] {
    for (int i = 0; i < kN; ++i) {
      ASSERT_TRUE(v[i]->Holds(i));
      pool.Delete(v[i]);
    }
  });
  other.join();
  EXPECT_EQ(pool.Stats().objects_in_use, 0u);
  // The other thread's frees come back here instead of new memory (after
  // what this thread's own cache still holds: at most two magazines).
  const uint64_t blocks = pool.Stats().blocks_held;
  std::set<T*> old(v.begin(), v.end());
  std::vector<T*> again;
  size_t reused = 0;
  for (int i = 0; i < kN; ++i) {
    again.push_back(pool.New());
    reused += old.count(again.back());
  }
  EXPECT_GE(reused, kN - 2 * 256u);
  EXPECT_EQ(pool.Stats().blocks_held, blocks);
  for (T* p : again) pool.Delete(p);
}

TEST(ObjectPoolDefaultTest, ExitingThreadHandsItsCacheBack) {
  using T = Item<4>;
  auto& pool = ObjectPool<T>::Default();
  std::thread t([&] {
    std::vector<T*> mine;
    for (int i = 0; i < 300; ++i) mine.push_back(pool.New());
    for (T* p : mine) pool.Delete(p);  // all in this thread's cache
    const ObjectPoolStats s = pool.Stats();
    EXPECT_EQ(s.objects_in_depot, 0u);
    EXPECT_GE(s.objects_cached, 300u);
  });
  t.join();
  const ObjectPoolStats s = pool.Stats();
  EXPECT_EQ(s.objects_in_use, 0u);
  EXPECT_GE(s.objects_in_depot, 300u);
  EXPECT_EQ(s.objects_in_depot, s.objects_cached);  // no dead thread cache
}

TEST(ObjectPoolDefaultTest, TrimAfterFreesUnmaps) {
  using T = Item<5>;
  auto& pool = ObjectPool<T>::Default();
  const size_t per_block = pool.objects_per_block();
  std::vector<T*> v;
  for (size_t i = 0; i < 4 * per_block; ++i) v.push_back(pool.New());
  const uint64_t blocks = pool.Stats().blocks_held;
  EXPECT_GE(blocks, 4u);
  // Freed by another thread that then exits: its caches go to the depot.
  std::thread([&] {
    for (T* p : v) pool.Delete(p);
  }).join();
  EXPECT_EQ(pool.Trim(), blocks * pool.block_size());
  const ObjectPoolStats s = pool.Stats();
  EXPECT_EQ(s.blocks_held, 0u);
  EXPECT_EQ(s.blocks_released, blocks);
  EXPECT_EQ(s.objects_cached, 0u);
  for (T* p : v) ASSERT_TRUE(Unmapped(p));
  // Still usable afterwards.
  T* p = pool.New(uint64_t{9});
  EXPECT_TRUE(p->Holds(9));
  pool.Delete(p);
}

// A thread_local destroyed after the pool's exit hook ran on its thread.
template <class T>
struct LateUser {
  bool armed = false;
  ~LateUser() {
    if (!armed) return;
    auto& pool = ObjectPool<T>::Default();
    std::vector<T*> v;
    for (int i = 0; i < 10; ++i) v.push_back(pool.New(uint64_t(i)));
    for (int i = 0; i < 10; ++i) {
      if (!v[i]->Holds(i)) std::abort();
      pool.Delete(v[i]);
    }
  }
};
thread_local LateUser<Item<6>> late_user;

TEST(ObjectPoolDefaultTest, WorksFromThreadExitAfterTheCacheIsGone) {
  using T = Item<6>;
  auto& pool = ObjectPool<T>::Default();
  std::thread t([&] {
    late_user.armed = true;  // constructed before the pool's exit hook
    pool.Delete(pool.New());
  });
  t.join();
  const ObjectPoolStats s = pool.Stats();
  EXPECT_EQ(s.objects_in_use, 0u);
  EXPECT_EQ(s.objects_cached, s.objects_in_depot);
}

#ifdef ARENARPC_ASAN
TEST(ObjectPoolDefaultDeathTest, UseAfterDeleteIsReported) {
  using T = Item<7>;
  auto& pool = ObjectPool<T>::Default();
  T* p = pool.New();
  pool.Delete(p);
  EXPECT_TRUE(ARENARPC_IS_POISONED(p));
  EXPECT_DEATH(
      {
        volatile uint64_t* w = &p->words[3];
        *w = 7;
      },
      "use-after-poison");
}
#endif

// Double Delete: tests/object_pool_test.cc (DoubleDeleteToDefaultIsCaught).

#if ARENARPC_DEBUG_CHECKS
// Documented: a wrong pool aborts in debug builds, either way round.
TEST(ObjectPoolDefaultDeathTest, WrongPoolIsCaught) {
  using T = Item<9>;
  ObjectPool<T> instance;
  T* from_instance = instance.New();
  T* from_default = ObjectPool<T>::Default().New();
  EXPECT_DEATH(ObjectPool<T>::Default().Delete(from_instance),
               "not from this pool");
  EXPECT_DEATH(instance.Delete(from_default), "not from this pool");
  instance.Delete(from_instance);
  ObjectPool<T>::Default().Delete(from_default);
}
#endif

}  // namespace
}  // namespace arenarpc
