#include "arenarpc/object_pool.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "arenarpc/internal/check.h"

namespace arenarpc {
namespace {

struct Payload {
  uint64_t words[8];  // 64 bytes, like the benchmark's objects
};

void Fill(Payload* p, uint64_t seed) {
  for (int i = 0; i < 8; ++i) p->words[i] = seed * 8 + i;
}
bool Holds(const Payload* p, uint64_t seed) {
  for (int i = 0; i < 8; ++i) {
    if (p->words[i] != seed * 8 + i) return false;
  }
  return true;
}

// True if the OS has no mapping at `p` any more (mincore fails with ENOMEM).
bool Unmapped(const void* p) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  void* start =
      reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) & ~(page - 1));
  unsigned char vec = 0;
  return mincore(start, page, &vec) != 0 && errno == ENOMEM;
}

TEST(ObjectPoolTest, ObjectsAreDistinctAndKeepTheirValues) {
  ObjectPool<Payload> pool;
  EXPECT_EQ(pool.Stats().object_stride, 64u);
  std::vector<Payload*> objects;
  std::set<Payload*> seen;
  for (uint64_t i = 0; i < 20000; ++i) {
    Payload* p = pool.New();
    ASSERT_NE(p, nullptr);
    ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % alignof(Payload), 0u);
    EXPECT_TRUE(seen.insert(p).second) << "object handed out twice";
    Fill(p, i);
    objects.push_back(p);
  }
  // Slots do not overlap: every object still holds its own values.
  for (uint64_t i = 0; i < objects.size(); ++i)
    ASSERT_TRUE(Holds(objects[i], i));
  EXPECT_EQ(pool.Stats().objects_in_use, 20000u);
  for (Payload* p : objects) pool.Delete(p);
  EXPECT_EQ(pool.Stats().objects_in_use, 0u);
}

TEST(ObjectPoolTest, ValuesSurviveHeavyReuse) {
  ObjectPool<Payload> pool;
  std::mt19937_64 rng(1);
  std::vector<std::pair<Payload*, uint64_t>> live;
  uint64_t next = 0;
  for (int step = 0; step < 200000; ++step) {
    if (live.empty() || rng() % 100 < 52) {
      Payload* p = pool.New();
      Fill(p, next);
      live.emplace_back(p, next++);
    } else {
      const size_t i = rng() % live.size();
      ASSERT_TRUE(Holds(live[i].first, live[i].second)) << "step " << step;
      pool.Delete(live[i].first);
      live[i] = live.back();
      live.pop_back();
    }
  }
  for (auto& [p, seed] : live) ASSERT_TRUE(Holds(p, seed));
  EXPECT_EQ(pool.Stats().objects_in_use, live.size());
  for (auto& [p, seed] : live) pool.Delete(p);
  EXPECT_EQ(pool.Stats().objects_in_use, 0u);
}

struct Tracked {
  Tracked(int* constructed, int* destroyed, std::string name,
          std::unique_ptr<int> value)
      : destroyed(destroyed), name(std::move(name)), value(std::move(value)) {
    ++*constructed;
  }
  ~Tracked() { ++*destroyed; }
  int* destroyed;
  std::string name;
  std::unique_ptr<int> value;
};

TEST(ObjectPoolTest, ForwardsArgumentsAndRunsDestructorsOnce) {
  ObjectPool<Tracked> pool;
  int constructed = 0;
  int destroyed = 0;
  std::vector<Tracked*> objects;
  for (int i = 0; i < 1000; ++i) {
    objects.push_back(pool.New(&constructed, &destroyed, absl::StrCat("n", i),
                               std::make_unique<int>(i)));
  }
  EXPECT_EQ(constructed, 1000);
  EXPECT_EQ(destroyed, 0);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_EQ(objects[i]->name, absl::StrCat("n", i));
    EXPECT_EQ(*objects[i]->value, i);  // the unique_ptr was moved in
  }
  for (Tracked* t : objects) pool.Delete(t);
  EXPECT_EQ(constructed, 1000);
  EXPECT_EQ(destroyed, 1000);
  pool.Delete(nullptr);  // a no-op
  EXPECT_EQ(destroyed, 1000);
}

struct ThrowsOnZero {
  explicit ThrowsOnZero(int v) : v(v) {
    if (v == 0) throw std::runtime_error("zero");
  }
  int v;
};

TEST(ObjectPoolTest, ThrowingConstructorReturnsTheSlot) {
  ObjectPool<ThrowsOnZero> pool;
  ThrowsOnZero* a = pool.New(1);
  EXPECT_THROW(pool.New(0), std::runtime_error);
  EXPECT_EQ(pool.Stats().objects_in_use, 1u);
  ThrowsOnZero* b = pool.New(2);  // reuses the slot the throw gave back
  EXPECT_EQ(b->v, 2);
  EXPECT_EQ(pool.Stats().objects_in_use, 2u);
  pool.Delete(a);
  pool.Delete(b);
}

// Magazines come from the heap; when it refuses one (injected with the
// test-only hook), no magazine may end up in two places: before the fix a
// thread's two magazines became one and slots were handed out twice.
std::vector<Payload*> NewDistinct(ObjectPool<Payload>& pool, int n) {
  std::vector<Payload*> out;
  std::set<Payload*> seen;
  for (int i = 0; i < n; ++i) {
    Payload* p = pool.New();
    EXPECT_NE(p, nullptr);
    EXPECT_TRUE(seen.insert(p).second) << "slot handed out twice: " << p;
    Fill(p, i);
    out.push_back(p);
  }
  return out;
}

int DeleteAll(ObjectPool<Payload>& pool, const std::vector<Payload*>& objects) {
  int threw = 0;
  for (Payload* p : objects) {
    try {
      pool.Delete(p);
    } catch (const std::bad_alloc&) {
      ++threw;
    }
  }
  return threw;
}

TEST(ObjectPoolTest, MagazineAllocationFailureLeavesNoAliasedMagazines) {
  ObjectPoolOptions o;
  o.magazine_size = 4;
  o.max_empty_magazines = 0;  // every magazine comes from the heap
  o.depot_shards = 1;
  ObjectPool<Payload> pool(o);

  // One failure: the slot goes to the depot instead; nothing is lost.
  std::vector<Payload*> objects = NewDistinct(pool, 32);
  internal::FailMagazineAllocationsForTest(1);
  EXPECT_EQ(DeleteAll(pool, objects), 0);
  internal::FailMagazineAllocationsForTest(0);
  EXPECT_EQ(pool.Stats().objects_in_use, 0u);
  EXPECT_EQ(pool.Stats().objects_lost, 0u);
  objects = NewDistinct(pool, 64);

  // The heap refuses every magazine: freed slots that find no magazine are
  // dropped and counted, never aliased.
  internal::FailMagazineAllocationsForTest(1 << 30);
  EXPECT_EQ(DeleteAll(pool, objects), 0);
  // A new thread cannot get its magazines: it works uncached.
  std::thread([&] {
    Payload* p = pool.New();
    ASSERT_NE(p, nullptr);
    pool.Delete(p);
  }).join();
  internal::FailMagazineAllocationsForTest(0);
  const ObjectPoolStats s = pool.Stats();
  EXPECT_GT(s.objects_lost, 0u);
  EXPECT_EQ(s.objects_in_use, 0u);
  DeleteAll(pool, NewDistinct(pool, 128));
  EXPECT_EQ(pool.Stats().objects_in_use, 0u);
}

// A depot drained and filled again reuses the magazines it emptied: the
// refill takes none from the heap (freeing and re-allocating them every
// cycle made glibc trim and re-fault its per-thread arenas). Trim()
// frees them.
TEST(ObjectPoolTest, DrainedMagazinesAreKeptForTheNextRefill) {
  ObjectPoolOptions o;
  o.magazine_size = 4;
  o.max_empty_magazines = 0;  // spares only from the peak rule
  o.depot_shards = 1;
  ObjectPool<Payload> pool(o);
  std::vector<Payload*> objects = NewDistinct(pool, 64);
  EXPECT_EQ(DeleteAll(pool, objects), 0);  // the depot fills: 14 magazines
  objects = NewDistinct(pool, 64);         // and drains: 14 spares
  internal::FailMagazineAllocationsForTest(1 << 30);
  EXPECT_EQ(DeleteAll(pool, objects), 0);  // refilled from the spares
  internal::FailMagazineAllocationsForTest(0);
  EXPECT_EQ(pool.Stats().objects_lost, 0u);
  EXPECT_EQ(pool.Stats().objects_in_use, 0u);

  objects = NewDistinct(pool, 64);
  pool.Trim();  // frees the spares
  internal::FailMagazineAllocationsForTest(1 << 30);
  EXPECT_EQ(DeleteAll(pool, objects), 0);
  internal::FailMagazineAllocationsForTest(0);
  EXPECT_GT(pool.Stats().objects_lost, 0u);
  EXPECT_EQ(pool.Stats().objects_in_use, 0u);
}

TEST(ObjectPoolTest, ReusesTheHottestObjectFirst) {
  ObjectPool<Payload> pool;
  Payload* a = pool.New();
  Payload* b = pool.New();
  pool.Delete(a);
  EXPECT_EQ(pool.New(), a);
  pool.Delete(b);
  pool.Delete(a);
  EXPECT_EQ(pool.New(), a);  // LIFO
  pool.Delete(a);
}

TEST(ObjectPoolTest, ReuseAllocatesNoNewBlocks) {
  ObjectPool<Payload> pool;
  constexpr int kN = 100000;
  std::vector<void*> slots(kN);
  uint64_t first_blocks = 0;
  for (int round = 0; round < 3; ++round) {
    for (auto& p : slots) p = pool.Allocate();
    const ObjectPoolStats s = pool.Stats();
    EXPECT_EQ(s.objects_in_use, static_cast<uint64_t>(kN));
    // Blocks hold what is in use plus at most two magazines of this thread.
    const uint64_t per_block = pool.objects_per_block();
    EXPECT_LE(s.blocks_held, (kN + 512 + per_block - 1) / per_block + 1);
    if (round == 0) {
      first_blocks = s.blocks_held;
    } else {
      EXPECT_EQ(s.blocks_held, first_blocks) << "round " << round;
    }
    std::shuffle(slots.begin(), slots.end(), std::mt19937(round));
    for (void* p : slots) pool.Deallocate(p);
    EXPECT_EQ(pool.Stats().objects_in_use, 0u);
    EXPECT_EQ(pool.Stats().objects_cached, s.objects_in_use + s.objects_cached);
  }
}

TEST(ObjectPoolTest, StatsAddUp) {
  ObjectPoolOptions o;
  o.magazine_size = 16;
  ObjectPool<Payload> pool(o);
  std::vector<Payload*> objects;
  for (int i = 0; i < 100; ++i) objects.push_back(pool.New());
  for (int i = 0; i < 60; ++i) pool.Delete(objects[i]);
  const ObjectPoolStats s = pool.Stats();
  EXPECT_EQ(s.objects_in_use, 40u);
  // 60 freed: at most two magazines stay with this thread, the rest went to
  // the depot.
  EXPECT_LE(s.objects_cached - s.objects_in_depot, 32u);
  EXPECT_GE(s.objects_in_depot, 60u - 32u);
  EXPECT_EQ(s.blocks_held, 1u);
  EXPECT_EQ(s.bytes_held, pool.block_size());
  // Every carved object is either in use or cached.
  EXPECT_LE(s.objects_in_use + s.objects_cached,
            s.blocks_held * pool.objects_per_block());
  for (int i = 60; i < 100; ++i) pool.Delete(objects[i]);
}

// A thread cache keeps no count: Stats() derives it from the stack pointers,
// which another thread may read across a magazine swap (`top` of the new
// magazine, `base` of the old). Such a pair must count as empty, never as a
// huge or negative number of cached objects.
TEST(ObjectPoolTest, CacheCountIsDerivedFromThePointers) {
  void* buf[16] = {};
  void** items = buf + 4;  // a magazine of 8
  void* other[8] = {};
  internal::ThreadCache c;
  EXPECT_EQ(c.CountForStats(8), 0u);  // detached
  c.Load(items, 3, 8);
  EXPECT_EQ(c.count(), 3u);
  EXPECT_EQ(c.CountForStats(8), 3u);
  c.Push(&other[0]);
  EXPECT_EQ(c.CountForStats(8), 4u);
  // Torn reads: `top` of another magazine, above or below `base`.
  c.top.store(other + 2, std::memory_order_relaxed);
  EXPECT_EQ(c.CountForStats(8), 0u);  // disjoint arrays: never 0..8 apart
  c.top.store(buf + 1, std::memory_order_relaxed);
  EXPECT_EQ(c.CountForStats(8), 0u);
  c.top.store(buf + 13, std::memory_order_relaxed);  // 9 above base
  EXPECT_EQ(c.CountForStats(8), 0u);
  c.Load(nullptr, 0, 0);
  EXPECT_EQ(c.Pop(), nullptr);  // detached: empty and full
  EXPECT_FALSE(c.Push(&other[1]));
}

TEST(ObjectPoolTest, TrimUnmapsFullyFreeBlocks) {
  ObjectPool<Payload> pool;
  const size_t per_block = pool.objects_per_block();
  std::vector<Payload*> objects;
  for (size_t i = 0; i < 5 * per_block; ++i) {
    objects.push_back(pool.New());
    Fill(objects.back(), i);
  }
  const uint64_t blocks = pool.Stats().blocks_held;
  EXPECT_GE(blocks, 5u);
  // Keep one object alive: its block must stay, all others may go.
  Payload* keeper = objects[per_block / 2];
  std::vector<Payload*> freed;
  for (Payload* p : objects) {
    if (p != keeper) {
      freed.push_back(p);
      pool.Delete(p);
    }
  }
  const size_t released = pool.Trim();
  const ObjectPoolStats s = pool.Stats();
  EXPECT_EQ(s.blocks_held, 1u);
  EXPECT_EQ(s.blocks_released, blocks - 1);
  EXPECT_EQ(released, (blocks - 1) * pool.block_size());
  EXPECT_EQ(s.objects_in_use, 1u);
  EXPECT_TRUE(Holds(keeper, per_block / 2));
  // The released memory is really gone from the address space.
  size_t unmapped = 0;
  for (Payload* p : freed) unmapped += Unmapped(p);
  EXPECT_GE(unmapped, freed.size() - per_block);
  EXPECT_FALSE(Unmapped(keeper));
  // The pool keeps working after a Trim.
  std::vector<Payload*> again;
  for (size_t i = 0; i < 2 * per_block; ++i) {
    again.push_back(pool.New());
    Fill(again.back(), i + 7);
  }
  for (size_t i = 0; i < again.size(); ++i) ASSERT_TRUE(Holds(again[i], i + 7));
  for (Payload* p : again) pool.Delete(p);
  pool.Delete(keeper);
  pool.Trim();
  EXPECT_EQ(pool.Stats().blocks_held, 0u);
  EXPECT_EQ(pool.Stats().objects_cached, 0u);
  EXPECT_TRUE(Unmapped(keeper));
}

TEST(ObjectPoolTest, TrimKeepsBlocksCachedByOtherThreadsUntilTheyExit) {
  ObjectPool<Payload> pool;
  std::vector<Payload*> objects;
  for (int i = 0; i < 100; ++i) objects.push_back(pool.New());
  // Another thread frees them: they sit in its cache, not the depot.
  std::atomic<bool> freed{false}, done{false};
  std::thread t([&] {
    for (Payload* p : objects) pool.Delete(p);
    freed = true;
    while (!done) std::this_thread::yield();
  });
  while (!freed) std::this_thread::yield();
  EXPECT_EQ(pool.Trim(), 0u);
  EXPECT_EQ(pool.Stats().blocks_held, 1u);
  done = true;
  t.join();  // the exiting thread hands its cache back
  EXPECT_EQ(pool.Trim(), pool.block_size());
  EXPECT_EQ(pool.Stats().blocks_held, 0u);
}

TEST(ObjectPoolTest, ExitingThreadHandsItsCacheBack) {
  ObjectPoolOptions o;
  o.magazine_size = 64;
  ObjectPool<Payload> pool(o);
  std::vector<void*> made;
  std::thread t([&] {
    // Two magazines' worth: every slot carved for this thread is handed out.
    std::vector<void*> mine;
    for (int i = 0; i < 128; ++i) mine.push_back(pool.Allocate());
    for (void* p : mine) pool.Deallocate(p);  // all stay in this thread's cache
    EXPECT_EQ(pool.Stats().objects_in_depot, 0u);
    made = mine;
  });
  t.join();
  ObjectPoolStats s = pool.Stats();
  EXPECT_EQ(s.objects_in_use, 0u);
  EXPECT_EQ(s.objects_in_depot,
            s.objects_cached);  // nothing lost in a dead cache
  EXPECT_EQ(s.objects_in_depot, 128u);
  // This thread reuses them rather than carving new objects.
  std::set<void*> old(made.begin(), made.end());
  std::vector<void*> mine;
  for (int i = 0; i < 128; ++i) {
    mine.push_back(pool.Allocate());
    EXPECT_TRUE(old.count(mine.back())) << i;
  }
  EXPECT_EQ(pool.Stats().blocks_held, 1u);
  for (void* p : mine) pool.Deallocate(p);
}

// A thread_local whose destructor uses the pool after the thread's exit hook
// already ran: the pool must work uncached.
struct LateUser {
  ObjectPool<Payload>* pool = nullptr;
  ~LateUser() {
    if (pool == nullptr) return;
    std::vector<Payload*> v;
    for (int i = 0; i < 10; ++i) {
      v.push_back(pool->New());
      Fill(v.back(), i);
    }
    for (int i = 0; i < 10; ++i) {
      if (!Holds(v[i], i)) std::abort();
      pool->Delete(v[i]);
    }
  }
};
thread_local LateUser late_user;

TEST(ObjectPoolTest, WorksFromThreadExitAfterTheCacheIsGone) {
  ObjectPool<Payload> pool;
  std::thread t([&] {
    late_user.pool = &pool;  // constructed before the pool's exit hook
    pool.Delete(pool.New());
  });
  t.join();
  const ObjectPoolStats s = pool.Stats();
  EXPECT_EQ(s.objects_in_use, 0u);
  EXPECT_EQ(s.objects_cached, s.objects_in_depot);
  EXPECT_EQ(s.blocks_held, 1u);
}

TEST(ObjectPoolTest, PoolsAreIndependent) {
  auto a = std::make_unique<ObjectPool<Payload>>();
  ObjectPool<Payload> b;
  Payload* pa = a->New();
  Payload* pb = b.New();
  a->Delete(pa);
  EXPECT_NE(b.New(), pa);  // b's cache never sees a's objects
  a.reset();               // destroyed while this thread has a cache in it
  // A new pool may reuse a's thread-slot index but not its dead cache (ASan
  // would report the use of freed memory): it starts with one fresh carve.
  ObjectPoolOptions o;
  o.magazine_size = 32;
  ObjectPool<Payload> c(o);
  Payload* pc = c.New();
  Fill(pc, 3);
  EXPECT_EQ(c.Stats().objects_in_use, 1u);
  EXPECT_EQ(c.Stats().objects_cached, 31u);
  EXPECT_EQ(c.Stats().blocks_held, 1u);
  c.Delete(pc);
  b.Delete(pb);
}

TEST(ObjectPoolTest, DestructorUnmapsEverything) {
  void* probe;
  {
    ObjectPool<Payload> pool;
    std::vector<Payload*> v;
    for (int i = 0; i < 10000; ++i) v.push_back(pool.New());
    for (int i = 0; i < 5000; ++i) pool.Delete(v[i]);
    probe = v[9999];  // still "in use" when the pool goes away
  }
  EXPECT_TRUE(Unmapped(probe));
}

struct alignas(256) Aligned {
  char c[300];
};
struct Tiny {
  char c;
};
struct Big {
  char bytes[100000];
};

TEST(ObjectPoolTest, HonoursAlignmentAndOddSizes) {
  ObjectPool<Aligned> aligned;
  ObjectPool<Tiny> tiny;
  ObjectPool<Big> big;
  std::vector<Aligned*> va;
  std::vector<Tiny*> vt;
  std::vector<Big*> vb;
  for (int i = 0; i < 3000; ++i) {
    va.push_back(aligned.New());
    ASSERT_EQ(reinterpret_cast<uintptr_t>(va.back()) % 256, 0u);
    std::memset(va.back(), i, sizeof(Aligned));
    vt.push_back(tiny.New());
    vt.back()->c = static_cast<char>(i);
  }
  for (int i = 0; i < 40; ++i) {
    vb.push_back(big.New());
    std::memset(vb.back(), i, sizeof(Big));
  }
  EXPECT_EQ(aligned.Stats().object_stride, 512u);
  EXPECT_EQ(tiny.Stats().object_stride, 1u);
  EXPECT_GE(big.objects_per_block(), 16u);
  for (int i = 0; i < 3000; ++i) {
    ASSERT_EQ(va[i]->c[299], static_cast<char>(i));
    ASSERT_EQ(vt[i]->c, static_cast<char>(i));
  }
  for (int i = 0; i < 40; ++i)
    ASSERT_EQ(vb[i]->bytes[99999], static_cast<char>(i));
  std::set<Tiny*> distinct(vt.begin(), vt.end());
  EXPECT_EQ(distinct.size(), vt.size());
  for (auto* p : va) aligned.Delete(p);
  for (auto* p : vt) tiny.Delete(p);
  for (auto* p : vb) big.Delete(p);
}

TEST(ObjectPoolTest, TinyMagazinesStillWork) {
  for (uint32_t m : {1u, 2u, 3u}) {
    ObjectPoolOptions o;
    o.magazine_size = m;
    o.max_empty_magazines = 0;
    ObjectPool<Payload> pool(o);
    std::vector<Payload*> v;
    for (int i = 0; i < 1000; ++i) {
      v.push_back(pool.New());
      Fill(v.back(), i);
    }
    for (int i = 0; i < 1000; i += 2) pool.Delete(v[i]);
    for (int i = 0; i < 1000; i += 2) {
      v[i] = pool.New();
      Fill(v[i], i);
    }
    for (int i = 0; i < 1000; ++i) ASSERT_TRUE(Holds(v[i], i)) << m;
    for (Payload* p : v) pool.Delete(p);
    EXPECT_EQ(pool.Stats().objects_in_use, 0u);
    EXPECT_EQ(pool.Stats().blocks_held, 1u);
  }
}

#ifdef ARENARPC_ASAN
TEST(ObjectPoolTest, FreeObjectsArePoisoned) {
  ObjectPool<Payload> pool;
  Payload* p = pool.New();
  EXPECT_FALSE(ARENARPC_IS_POISONED(p));
  pool.Delete(p);
  EXPECT_TRUE(ARENARPC_IS_POISONED(p));
  EXPECT_TRUE(ARENARPC_IS_POISONED(&p->words[7]));
  // Never handed out yet: poisoned too.
  Payload* q = pool.New();
  EXPECT_TRUE(ARENARPC_IS_POISONED(q + 1));
  pool.Delete(q);
}

TEST(ObjectPoolDeathTest, UseAfterDeleteIsReported) {
  ObjectPool<Payload> pool;
  Payload* p = pool.New();
  p->words[0] = 1;
  pool.Delete(p);
  EXPECT_DEATH(
      {
        volatile uint64_t* w = &p->words[3];
        *w = 7;
      },
      "use-after-poison");
}
#endif

#if ARENARPC_DEBUG_CHECKS || defined(ARENARPC_ASAN)
template <class T>
void ExpectDoubleDeleteCaught(ObjectPool<T>& pool) {
  T* p = pool.New();
  T* q = pool.New();  // keeps p's slot from being handed out again
  pool.Delete(p);
  EXPECT_DEATH(pool.Delete(p), "freed twice");
  EXPECT_DEATH(pool.Deallocate(p), "freed twice");
  pool.Delete(q);
}

TEST(ObjectPoolDeathTest, DoubleDeleteIsCaught) {
  ObjectPool<Payload> pool;
  ExpectDoubleDeleteCaught(pool);
}

// Default()'s per-type thread caches run the same checks.
struct DefaultPayload : Payload {};
TEST(ObjectPoolDeathTest, DoubleDeleteToDefaultIsCaught) {
  ExpectDoubleDeleteCaught(ObjectPool<DefaultPayload>::Default());
}
#endif

#if ARENARPC_DEBUG_CHECKS
// The same misuse with ASan's poison lifted, so that only the debug in-use
// bitmap can catch it (ASan builds would otherwise catch it first).
TEST(ObjectPoolDeathTest, DoubleDeleteIsCaughtByTheDebugBitmap) {
  ObjectPool<Payload> pool;
  Payload* p = pool.New();
  Payload* q = pool.New();
  pool.Delete(p);
  ARENARPC_UNPOISON(p, sizeof(Payload));
  EXPECT_DEATH(pool.Delete(p), "freed twice");
  EXPECT_DEATH(pool.Deallocate(p), "freed twice");
  ARENARPC_POISON(p, sizeof(Payload));
  pool.Delete(q);
}

TEST(ObjectPoolDeathTest, DeleteToTheWrongPoolIsCaught) {
  ObjectPool<Payload> a;
  ObjectPool<Payload> b;
  Payload* p = a.New();
  EXPECT_DEATH(b.Delete(p), "not from this pool");
  EXPECT_DEATH(b.Deallocate(reinterpret_cast<char*>(a.New()) + 8),
               "not the address of an object|not from this pool");
  a.Delete(p);
}
#endif

}  // namespace
}  // namespace arenarpc
