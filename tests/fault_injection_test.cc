// Allocation failure: with 1 in N of the OS mappings (and, separately, of
// the heap allocations) failing, every public API returns its documented
// error and the pools stay consistent, leak nothing and work again once the
// faults stop. LeakSanitizer (the ASan build) checks the leaks.
#include "fault_injection.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <new>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "arenarpc/arena.h"
#include "arenarpc/message_pool.h"
#include "arenarpc/object_pool.h"
#include "arenarpc/page_pool.h"
#include "test_messages.pb.h"
#include "test_util.h"

// The replaced operator new is malloc and its delete is free, consistently;
// gcc -O2 sees only "free of a new'ed pointer" where it inlines them.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

// --- heap faults: the test binary's operator new fails 1 in N calls made on
// a thread that armed it (malloc-backed; delete matches) -------------------
namespace {
thread_local uint64_t heap_fail_one_in = 0;  // 0: never
thread_local uint64_t heap_calls = 0;
thread_local uint64_t heap_failures = 0;

void* FaultyNew(size_t n) {
  if (heap_fail_one_in != 0 && heap_calls++ % heap_fail_one_in == 0) {
    ++heap_failures;
    return nullptr;
  }
  return std::malloc(n == 0 ? 1 : n);
}
}  // namespace

void* operator new(size_t n) {
  void* p = FaultyNew(n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](size_t n) { return operator new(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  return FaultyNew(n);
}
void* operator new[](size_t n, const std::nothrow_t&) noexcept {
  return FaultyNew(n);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}

namespace arenarpc {
namespace {

using google::protobuf::util::MessageDifferencer;
using test::MapFaults;

// Arms heap faults on this thread for its scope.
class HeapFaults {
 public:
  explicit HeapFaults(uint64_t one_in) {
    heap_calls = 1;  // the first call succeeds, then every one_in-th fails
    heap_fail_one_in = one_in;
  }
  ~HeapFaults() { heap_fail_one_in = 0; }
};

// A message and its wire form, parsed back on the heap (the reference).
struct BigNode {
  std::string wire;
  test::Node reference;
};

BigNode MakeBigNode(int seed) {
  std::mt19937 rng(seed);
  test::Node node;
  test::FillNode(rng, 4, &node);
  // Sub-messages well over a page (string bytes are on the heap on 3.21),
  // so parsing needs new arena blocks.
  for (int i = 0; i < 3000; ++i) node.add_leaves()->add_numbers(i);
  BigNode big{node.SerializeAsString(), {}};
  EXPECT_TRUE(big.reference.ParseFromString(big.wire));
  return big;
}

TEST(PagePoolFaultTest, AllocateReturnsNullAndPoolStaysConsistent) {
  const int64_t mapped_before = MapFaults::mapped_bytes();
  {
    MapFaults faults(3);
    const uint64_t failures_before = MapFaults::failures();
    PagePoolOptions o;
    o.page_size = 16 << 10;
    o.thread_cache_pages = 4;
    o.depot_capacity_bytes = 8 * o.page_size;
    PagePool pool(o);
    std::vector<void*> held;
    size_t nulls = 0;
    std::mt19937 rng(1);
    for (int i = 0; i < 4000; ++i) {
      if (held.empty() || rng() % 3 != 0) {
        void* p = pool.Allocate();
        if (p == nullptr) {
          ++nulls;
          continue;
        }
        static_cast<char*>(p)[o.page_size - 1] = 1;  // usable
        held.push_back(p);
      } else {
        const size_t k = rng() % held.size();
        pool.Deallocate(held[k]);
        held[k] = held.back();
        held.pop_back();
      }
      if (i % 500 == 0) pool.Trim();  // so that the pool maps again
    }
    EXPECT_GT(nulls, 0u);
    std::printf(
        "figure: PagePool, mappings 1 in 3: %zu Allocate() gave nullptr, %zu "
        "pages held and counted\n",
        nulls, held.size());
    EXPECT_GT(MapFaults::failures(), failures_before);
    EXPECT_EQ(pool.Stats().pages_in_use, held.size());
    for (void* p : held) pool.Deallocate(p);
    EXPECT_EQ(pool.Stats().pages_in_use, 0u);

    faults.set_fail_one_in(0);  // the pool works again
    pool.Trim();
    for (int i = 0; i < 64; ++i)
      held[0] = pool.Allocate(), pool.Deallocate(held[0]);
    void* p = pool.Allocate();
    ASSERT_NE(p, nullptr);
    pool.Deallocate(p);
  }  // ~PagePool unmaps every page it mapped
  EXPECT_EQ(MapFaults::mapped_bytes(), mapped_before);
}

struct Payload {
  explicit Payload(int v) : value(v) {}
  int value;
  char pad[120];
};

TEST(ObjectPoolFaultTest, NewThrowsAllocateReturnsNullPoolStaysConsistent) {
  const int64_t mapped_before = MapFaults::mapped_bytes();
  {
    MapFaults faults(2);
    ObjectPoolOptions o;
    o.block_size = 64 << 10;  // few objects per block: many mappings
    o.magazine_size = 8;
    ObjectPool<Payload> pool(o);
    std::vector<Payload*> live;
    size_t thrown = 0, nulls = 0;
    for (int i = 0; i < 20000; ++i) {
      try {
        Payload* p = pool.New(i);
        EXPECT_EQ(p->value, i);
        live.push_back(p);
      } catch (const std::bad_alloc&) {
        ++thrown;
      }
      void* raw = pool.Allocate();
      if (raw == nullptr) {
        ++nulls;
      } else {
        pool.Deallocate(raw);
      }
    }
    EXPECT_GT(thrown, 0u);
    EXPECT_GT(nulls, 0u);
    std::printf(
        "figure: ObjectPool, mappings 1 in 2: %zu New() threw std::bad_alloc, "
        "%zu Allocate() gave nullptr, %zu alive and counted\n",
        thrown, nulls, live.size());
    EXPECT_EQ(pool.Stats().objects_in_use, live.size());
    for (Payload* p : live) pool.Delete(p);
    EXPECT_EQ(pool.Stats().objects_in_use, 0u);
    faults.set_fail_one_in(0);
    Payload* p = pool.New(7);
    EXPECT_EQ(p->value, 7);
    pool.Delete(p);
  }
  EXPECT_EQ(MapFaults::mapped_bytes(), mapped_before);
}

// Default()'s first use may be the one the OS refuses.
struct DefaultOnly {
  int value = 3;
};

TEST(ObjectPoolFaultTest, DefaultThrowsWhileTheOsRefusesThenWorks) {
  auto& pool = ObjectPool<DefaultOnly>::Default();
  {
    MapFaults faults(1);  // every mapping fails
    EXPECT_THROW(pool.New(), std::bad_alloc);
    EXPECT_EQ(pool.Allocate(), nullptr);
    EXPECT_EQ(pool.Stats().objects_in_use, 0u);
  }
  DefaultOnly* p = pool.New();
  EXPECT_EQ(p->value, 3);
  EXPECT_EQ(pool.Stats().objects_in_use, 1u);
  pool.Delete(p);
  EXPECT_EQ(pool.Stats().objects_in_use, 0u);
}

// Nothing cached in the default page pool: the next page comes from the OS.
void EmptyDefaultPagePool() {
  PagePool::Default().FlushThreadCache();
  PagePool::Default().Trim();
}

TEST(ArenaFaultTest, PagesRefusedArenaFallsBackToHeapThenBack) {
  const BigNode big = MakeBigNode(1);
  const uint64_t pages_in_use = PagePool::Default().Stats().pages_in_use;
  const uint64_t fallback_before = GetArenaStats().blocks_from_heap_fallback;
  {
    EmptyDefaultPagePool();
    MapFaults faults(1);
    for (int i = 0; i < 20; ++i) {
      ScopedArena arena;
      auto* node = arena.Create<test::Node>();
      ASSERT_TRUE(node->ParseFromString(big.wire));
      EXPECT_TRUE(MessageDifferencer::Equals(*node, big.reference));
    }
  }
  EXPECT_GT(GetArenaStats().blocks_from_heap_fallback, fallback_before);
  std::printf(
      "figure: every mapping refused: 20 parses equal, %llu heap fallback "
      "blocks\n",
      static_cast<unsigned long long>(
          GetArenaStats().blocks_from_heap_fallback - fallback_before));
  EXPECT_EQ(PagePool::Default().Stats().pages_in_use, pages_in_use);
  // Faults over: pages again, no more fallback.
  const uint64_t fallback_after = GetArenaStats().blocks_from_heap_fallback;
  {
    ScopedArena arena;
    auto* node = arena.Create<test::Node>();
    ASSERT_TRUE(node->ParseFromString(big.wire));
    EXPECT_TRUE(MessageDifferencer::Equals(*node, big.reference));
    EXPECT_GT(PagePool::Default().Stats().pages_in_use, pages_in_use);
  }
  EXPECT_EQ(GetArenaStats().blocks_from_heap_fallback, fallback_after);
  // Once no heap block is alive, released arenas are kept idle again (while
  // one is, they are destroyed): the next scopes reuse one arena.
  { ScopedArena warm; }
  const ArenaStats before = GetArenaStats();
  for (int i = 0; i < 5; ++i) {
    ScopedArena arena;
  }
  EXPECT_EQ(GetArenaStats().arenas_created, before.arenas_created);
  EXPECT_GE(GetArenaStats().arenas_idle, 1u);
}

// One arena holding pool pages and heap fallback blocks: each block goes
// back to where it came from, told apart by its address (pages are 4 KiB
// aligned, fallback blocks never are). A fallback block taken for a page
// fails the pool's debug check (ASan: a bad free); a page taken for a
// fallback block is a bad free; a fallback block not counted back keeps
// arenas from being reused.
TEST(ArenaFaultTest, ArenaMixingPagesAndFallbackBlocksFreesEachToItsSource) {
  const BigNode big = MakeBigNode(3);
  const uint64_t pages_in_use = PagePool::Default().Stats().pages_in_use;
  const uint64_t fallback_before = GetArenaStats().blocks_from_heap_fallback;
  {
    ScopedArena arena;  // its first block: a page
    EmptyDefaultPagePool();
    MapFaults faults(1);
    auto* on_heap = arena.Create<test::Node>();
    ASSERT_TRUE(on_heap->ParseFromString(big.wire));
    ASSERT_GT(GetArenaStats().blocks_from_heap_fallback, fallback_before);
    faults.set_fail_one_in(0);
    const uint64_t pages_before = PagePool::Default().Stats().pages_in_use;
    auto* on_pages = arena.Create<test::Node>();
    ASSERT_TRUE(on_pages->ParseFromString(big.wire));
    EXPECT_GT(PagePool::Default().Stats().pages_in_use, pages_before);
    EXPECT_TRUE(MessageDifferencer::Equals(*on_heap, big.reference));
    EXPECT_TRUE(MessageDifferencer::Equals(*on_pages, big.reference));
  }
  // Every page back; the arena too was destroyed (a fallback block was alive
  // at its release), so its first page may have gone back as well.
  EXPECT_LE(PagePool::Default().Stats().pages_in_use, pages_in_use);
  // Every fallback block was freed as one: released arenas are kept again.
  { ScopedArena warm; }
  const uint64_t created = GetArenaStats().arenas_created;
  for (int i = 0; i < 5; ++i) {
    ScopedArena arena;
  }
  EXPECT_EQ(GetArenaStats().arenas_created, created);
}

TEST(MessagePoolFaultTest, PagesRefusedAcquireAndParseStillWork) {
  const BigNode big = MakeBigNode(2);
  MessagePool<test::Node> pool;
  {
    EmptyDefaultPagePool();
    MapFaults faults(2);
    for (int i = 0; i < 50; ++i) {
      PooledMessage<test::Node> m = pool.Acquire();
      ASSERT_TRUE(m.ParseFrom(big.wire));
      EXPECT_TRUE(MessageDifferencer::Equals(*m, big.reference));
      PooledMessage<test::Node> bad = pool.Acquire();
      EXPECT_FALSE(bad.ParseFrom(std::string("\xff\xff\xff", 3)));
      EXPECT_EQ(bad->ByteSizeLong(), 0u);
    }
  }
  EXPECT_EQ(pool.Stats().in_use, 0u);
  PooledMessage<test::Node> m = pool.Acquire();
  ASSERT_TRUE(m.ParseFrom(big.wire));
  EXPECT_TRUE(MessageDifferencer::Equals(*m, big.reference));
}

// A parse that throws leaves the message in whatever state protobuf left it
// (33.6: a null element in a repeated field): the pool destroys it on return
// and the next Acquire() parses correctly. Each pool mode, every fault rate.
TEST(HeapFaultTest, AnInstanceWhoseParseThrewIsNeverReused) {
  const BigNode big = MakeBigNode(4);
  MessagePoolOptions lossy;
  lossy.reuse_lossy_types = true;
  MessagePoolOptions on_arenas = lossy;
  on_arenas.arena_instances = true;
  for (const MessagePoolOptions& options :
       {MessagePoolOptions(), lossy, on_arenas}) {
    MessagePool<test::Node> pool(options);
    uint64_t thrown = 0;
    for (uint64_t one_in = 2; one_in < 400; one_in += 7) {
      {  // one instance warm: the throwing parse reuses its capacity
        PooledMessage<test::Node> m = pool.Acquire();
        ASSERT_TRUE(m.ParseFrom(big.wire));
      }
      try {
        PooledMessage<test::Node> m = pool.Acquire();
        HeapFaults heap(one_in);
        m.ParseFrom(big.wire);
      } catch (const std::bad_alloc&) {
        ++thrown;
      }
      EXPECT_EQ(pool.Stats().rebuilt_after_exception, thrown);
      PooledMessage<test::Node> m = pool.Acquire();
      ASSERT_TRUE(m.ParseFrom(big.wire));
      EXPECT_TRUE(MessageDifferencer::Equals(*m, big.reference));
    }
    EXPECT_GT(thrown, 0u);
    EXPECT_EQ(pool.Stats().in_use, 0u);
  }
}

// The same for a handle destroyed by unwinding (a handler that throws while
// filling a message); an ordinary return still reuses.
TEST(HeapFaultTest, AHandleDestroyedByUnwindingIsNotReused) {
  MessagePoolOptions lossy;
  lossy.reuse_lossy_types = true;
  MessagePool<test::Node> pool(lossy);
  try {
    PooledMessage<test::Node> m = pool.Acquire();
    m->add_leaves()->add_numbers(1);
    throw std::runtime_error("handler failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(pool.Stats().rebuilt_after_exception, 1u);
  { PooledMessage<test::Node> m = pool.Acquire(); }
  { PooledMessage<test::Node> m = pool.Acquire(); }
  EXPECT_EQ(pool.Stats().rebuilt_after_exception, 1u);
  EXPECT_EQ(pool.Stats().reuse_hits, 1u);
  // Inside a catch block nothing unwinds: reused as usual.
  try {
    throw std::runtime_error("x");
  } catch (const std::runtime_error&) {
    PooledMessage<test::Node> m = pool.Acquire();
  }
  EXPECT_EQ(pool.Stats().rebuilt_after_exception, 1u);
}

// The heap fails too (and the OS, 1 in 3): ScopedArena, Create, parse and
// MessagePool either work or throw std::bad_alloc; nothing leaks (LSan), the
// pools' counts add up and all works once the faults stop.
TEST(HeapFaultTest, ArenasAndMessagePoolsThrowBadAllocAndRecover) {
  const BigNode big = MakeBigNode(3);
  // Every page in use afterwards is the first block of an idle arena.
  const uint64_t pages_before = PagePool::Default().Stats().pages_in_use;
  const uint64_t idle_before = GetArenaStats().arenas_idle;
  size_t ok = 0, thrown = 0;
  {
    MessagePool<test::Node> pool;
    MessagePoolOptions lossy;
    lossy.reuse_lossy_types = true;  // the Clear()-and-reuse path as well
    MessagePool<test::Node> reuse(lossy);
    MapFaults faults(3);
    for (uint64_t one_in = 1; one_in < 200; one_in = one_in * 5 / 4 + 1) {
      try {
        HeapFaults heap(one_in);
        ScopedArena arena;
        auto* node = arena.Create<test::Node>();
        if (node->ParseFromString(big.wire)) {
          heap_fail_one_in = 0;
          EXPECT_TRUE(MessageDifferencer::Equals(*node, big.reference));
        }
        ++ok;
      } catch (const std::bad_alloc&) {
        ++thrown;
      }
      for (MessagePool<test::Node>* p : {&pool, &reuse}) {
        try {
          HeapFaults heap(one_in);
          PooledMessage<test::Node> m = p->Acquire();
          if (m.ParseFrom(big.wire)) {
            heap_fail_one_in = 0;
            EXPECT_TRUE(MessageDifferencer::Equals(*m, big.reference));
          }
          ++ok;
        } catch (const std::bad_alloc&) {
          ++thrown;
        }
      }
    }
    EXPECT_EQ(pool.Stats().in_use, 0u);
    EXPECT_EQ(reuse.Stats().in_use, 0u);
  }
  EXPECT_GT(thrown, 0u);
  std::printf(
      "figure: heap 1 in N, mappings 1 in 3: %zu operations worked, %zu threw "
      "std::bad_alloc\n",
      ok, thrown);
  EXPECT_GT(ok, 0u);
  EXPECT_LE(PagePool::Default().Stats().pages_in_use - pages_before,
            GetArenaStats().arenas_idle - idle_before);
  MessagePool<test::Node> pool;
  MessagePoolOptions lossy;
  lossy.reuse_lossy_types = true;
  MessagePool<test::Node> reuse(lossy);
  for (MessagePool<test::Node>* p : {&pool, &reuse}) {
    PooledMessage<test::Node> m = p->Acquire();
    ASSERT_TRUE(m.ParseFrom(big.wire));
    EXPECT_TRUE(MessageDifferencer::Equals(*m, big.reference));
  }
}

}  // namespace
}  // namespace arenarpc
