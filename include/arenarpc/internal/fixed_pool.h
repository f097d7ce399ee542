// The type-erased engine behind ObjectPool<T>: fixed-size slots carved from
// aligned blocks, per-thread magazines of slot pointers, a global depot.
//
//   arenarpc::internal::FixedPool pool(/*slot_size=*/64, /*slot_align=*/8, {});
//   void* p = pool.Allocate();   // nullptr only if the OS refuses memory
//   pool.Deallocate(p);          // from any thread
//
// Layout. A block is `block_size` bytes (a power of two), aligned to its
// size, mapped with mmap; its first bytes are a BlockHeader, then slots of
// `stride` bytes. A slot's block is found by masking its address, so the
// pool never keeps a per-slot header and a live object costs exactly its
// stride. Slots are carved from the newest block lazily, one batch at a time,
// so pages of a block that were never handed out are never touched.
//
// Caching. Free slots are kept as *pointers* in magazines (arrays of
// `magazine_size` pointers), never as a linked list threaded through the free
// objects: popping a pointer does not touch the object, so reuse in shuffled
// order costs no cache miss inside the pool. Each thread has two magazines
// (Bonwick's "loaded" and "previous"); a thread moves whole magazines to and
// from the depot, by pointer, under one short lock per `magazine_size`
// operations. The depot is sharded; each shard stacks full magazines, and a
// partial one collects the slots of exiting threads and of threads that can
// no longer cache.
//
// Thread safety: every member function may be called concurrently. A slot
// may be freed by another thread than the one that took it; the freeing
// thread's magazines fill up and go to the depot, where allocating threads
// find them before carving new slots, so a producer/consumer pair stays
// bounded by what is in flight plus the caches.
// Lifetime: the destructor unmaps every block, including slots still handed
// out. A thread that exits hands its magazines to the depot. A Lazy pool
// (ObjectPool<T>::Default) is constant-initialised, set up by its first slow
// path, and must never be destroyed: its thread caches are per-type
// thread_locals that the caller passes in (AllocateWith/DeallocateWith).
#ifndef ARENARPC_INTERNAL_FIXED_POOL_H_
#define ARENARPC_INTERNAL_FIXED_POOL_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "arenarpc/internal/check.h"
#include "arenarpc/internal/mutex.h"
#include "arenarpc/internal/thread_cache.h"
#include "arenarpc/internal/thread_slots.h"
#include "arenarpc/internal/tls_model.h"

namespace arenarpc::internal {

// The pool's own options, so that it depends on no public header;
// ObjectPoolOptions (arenarpc/object_pool.h) documents and maps to them.
struct FixedPoolOptions {
  size_t block_size = size_t{256} << 10;  // raised to hold 16 slots
  uint32_t magazine_size = 256;           // in [1, 2^20]
  uint32_t max_empty_magazines = 256;     // across all shards; see Shard
  uint32_t depot_shards = 0;  // 0: twice the hardware threads, in [4, 64]
};

struct FixedPoolStats {
  size_t slot_size = 0;          // the stride: bytes one object occupies
  uint64_t in_use = 0;           // handed out and not yet returned
  uint64_t cached = 0;           // free, in thread caches or the depot
  uint64_t cached_in_depot = 0;  // the part of `cached` in the depot
  uint64_t blocks = 0;           // blocks mapped now
  uint64_t bytes_held = 0;       // blocks * block_size
  uint64_t blocks_released = 0;  // unmapped by Trim() since start
  uint64_t lost = 0;  // freed slots dropped: no memory for a magazine
};

// Test-only: the next `n` magazines the pools would allocate from the heap
// fail instead, as if the heap were exhausted (0: none). Process-wide; for
// tests of the out-of-memory paths, never for production use.
void FailMagazineAllocationsForTest(int n);

// An array of free slot pointers; moves between thread caches and the depot
// by pointer.
struct Magazine {
  Magazine* next;  // in a depot list
  uint32_t count;  // valid while in the depot
  void* items[];   // magazine_size entries
};

class FixedPool final : private ThreadSlots::Owner {
 public:
  FixedPool(size_t slot_size, size_t slot_align,
            const FixedPoolOptions& options);
  // A pool with default options whose depot, layout and thread-slot key are
  // set up on first use, so that it can be constinit (ObjectPool<T>::Default:
  // no guard on access). Its owner must never destroy it.
  struct Lazy {};
  constexpr FixedPool(Lazy, size_t slot_size, size_t slot_align)
      : stride_(RoundUpStride(slot_size, slot_align)),
        lazy_slot_size_(slot_size),
        lazy_slot_align_(slot_align) {}
  ~FixedPool();
  FixedPool(const FixedPool&) = delete;
  FixedPool& operator=(const FixedPool&) = delete;

  // Instance path: this thread's cache is found through ThreadSlots.
  void* Allocate() { return AllocateWith(GetCache()); }
  void Deallocate(void* p) { DeallocateWith(GetCache(), p); }

  // With the calling thread's cache for this pool, found by the caller (a
  // per-type thread_local for ObjectPool<T>::Default). nullptr, or a
  // detached cache, takes the slow path, which attaches it.
  void* AllocateWith(ThreadCache* c) {
    if (__builtin_expect(c != nullptr, 1)) {
      if (void* p = c->Pop()) {
        OnHandOut(p);
        return p;
      }
    }
    void* p = AllocateSlow(c);
    if (p != nullptr) OnHandOut(p);
    return p;
  }
  void DeallocateWith(ThreadCache* c, void* p) {
    OnReturn(p);
    if (__builtin_expect(c != nullptr, 1) && c->Push(p)) return;
    DeallocateSlow(c, p);
  }

  // Debug-build check that `p` may be returned (from this pool and handed
  // out); Deallocate() runs it too. ObjectPool::Delete calls it before the
  // destructor so a double Delete is reported before ~T runs twice.
  void CheckReturnable(const void* p) const {
#ifdef ARENARPC_ASAN
    // A free slot is poisoned: catches a double return in any ASan build.
    ARENARPC_CHECK(!ARENARPC_IS_POISONED(p),
                   "ObjectPool::Delete/Deallocate: object freed twice");
#endif
    if (ARENARPC_DEBUG_CHECKS) DebugCheckReturnable(p);
  }

  void FlushThreadCache();  // this thread's magazines -> depot
  // Unmaps fully free blocks; returns bytes. Unchecked by the thread-safety
  // analysis: it holds every shard, a run-time set of locks.
  size_t Trim() ABSL_NO_THREAD_SAFETY_ANALYSIS;
  FixedPoolStats Stats() const;

  size_t stride() const { return stride_; }
  size_t block_size() const { return Ready().block_size_; }
  size_t slots_per_block() const { return Ready().slots_per_block_; }

 private:
  static constexpr size_t RoundUpStride(size_t size, size_t align) {
    size = size == 0 ? 1 : size;
    return align == 0 ? size : (size + align - 1) / align * align;
  }
  struct BlockHeader;

  // The last pool this thread used, so that the common case of one hot pool
  // costs one TLS compare instead of a ThreadSlots lookup. Generations are
  // never reused, so an entry of a destroyed pool never matches again; the
  // exiting thread clears its entry in OnThreadExit. kNone matches no key,
  // not even a Lazy pool's before set-up (generation 0).
  struct LastUsed {
    uint64_t generation;
    void* cache;
  };
  static constexpr LastUsed kNone{~uint64_t{0}, nullptr};
  ARENARPC_TLS_MODEL static inline thread_local constinit LastUsed last_used_ =
      kNone;

  ThreadCache* GetCache() const {
    const LastUsed& l = last_used_;
    if (__builtin_expect(l.generation == key_.generation, 1)) {
      // Set only with a cache: lets the compiler drop the null test.
      if (l.cache == nullptr) __builtin_unreachable();
      return static_cast<ThreadCache*>(l.cache);
    }
    void* c = ThreadSlots::Get(key_);
    if (c != nullptr) last_used_ = {key_.generation, c};
    return static_cast<ThreadCache*>(c);
  }

  // A Lazy pool is set up by the first call that needs more than stride_.
  bool ready() const { return ready_.load(std::memory_order_acquire); }
  const FixedPool& Ready() const {
    if (__builtin_expect(!ready(), 0)) const_cast<FixedPool*>(this)->SetUp();
    return *this;
  }
  void SetUp();  // once; Lazy pools only
  void Configure(size_t slot_size, size_t slot_align,
                 const FixedPoolOptions& options);

  // Hand-out and return hooks run only here, inline, in the caller's
  // translation unit: a debug build of the caller marks and checks every
  // slot it takes and returns, a release build none, whatever build the
  // library is. The slot bitmap exists only if the library was built with
  // debug checks (has_bitmap_); without it the Debug* functions check
  // ownership only. Mixing Debug and Release objects is therefore safe.
  void OnHandOut(void* p) {
    ARENARPC_UNPOISON(p, stride_);
    if (ARENARPC_DEBUG_CHECKS) DebugMark(p, true);
  }
  void OnReturn(void* p) {
    CheckReturnable(p);
    if (ARENARPC_DEBUG_CHECKS) DebugMark(p, false);
    ARENARPC_POISON(p, stride_);
  }
  void DebugCheckReturnable(const void* p) const;
  void DebugMark(const void* p, bool in_use) const;

  void* AllocateSlow(ThreadCache* c);  // the caller runs OnHandOut
  void DeallocateSlow(ThreadCache* c, void* p);
  // Gives `c` (nullptr: a new heap cache) magazines and registers it for
  // this thread; nullptr if the thread is exiting (then go uncached).
  ThreadCache* Attach(ThreadCache* c);
  void Detach(ThreadCache* c);  // magazines to the depot; requires nothing
  void OnThreadExit(void* cache) override;

  // A depot shard: full magazines, one partial, spare empty ones. A thread
  // pushes to and pops from its home shard, so on a steady workload the
  // magazines (and the pointers in them) stay with the core that filled them;
  // an empty home shard steals from the others before new slots are carved.
  struct alignas(64) Shard {
    Mutex mu;
    Magazine* full ABSL_GUARDED_BY(mu) = nullptr;  // stack
    Magazine* partial ABSL_GUARDED_BY(mu) = nullptr;
    Magazine* empty ABSL_GUARDED_BY(mu) = nullptr;
    uint32_t empty_count ABSL_GUARDED_BY(mu) = 0;
    uint64_t in_depot ABSL_GUARDED_BY(mu) = 0;  // slots in full + partial
    // The most full magazines (in_depot / magazine size) the shard held
    // since the last Trim(): it keeps that many spare magazines.
    uint64_t peak_full ABSL_GUARDED_BY(mu) = 0;
  };

  // nullptr if the heap refuses memory; nothing changed then.
  Magazine* NewMagazineLocked(Shard& s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu);
  // Keeps `m` as a spare while the shard has fewer than
  // max(max_empty_per_shard_, peak_full), else frees it. A workload that
  // drains the depot and fills it again (every thread allocating and then
  // freeing many objects) then reuses the same magazines instead of freeing
  // them to the heap and allocating them again each time: that churn made
  // glibc trim and re-fault its per-thread arenas (docs/DESIGN_NOTES.md,
  // "The 2-thread gap"). Spares never exceed the magazines the shard
  // already held at its peak; Trim() frees them all.
  void FreeMagazineLocked(Shard& s, Magazine* m)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu);
  // Counts `n` more slots in the shard's depot (and its peak_full).
  void AddToDepotLocked(Shard& s, uint64_t n)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu) {
    s.in_depot += n;
    s.peak_full = std::max(s.peak_full, s.in_depot / magazine_size_);
  }
  // Items no magazine can be found for (out of memory) are dropped: lost_.
  void PutItemsLocked(Shard& s, void* const* items, size_t n)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu);
  Magazine* TakeFullLocked(Shard& s)  // or nullptr
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu);
  Magazine* TakeFullFromAnyShard(
      ThreadCache* c);                      // home first; frees c->previous
  size_t CarveLocked(void** out, size_t n)  // 0: no memory
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  BlockHeader* MapBlock();
  void UnmapBlock(BlockHeader* b);

  BlockHeader* HeaderOf(const void* p) const {
    return reinterpret_cast<BlockHeader*>(reinterpret_cast<uintptr_t>(p) &
                                          ~(uintptr_t{block_size_} - 1));
  }

  // Set by the constructor (a Lazy pool: by SetUp), then constant.
  size_t stride_ = 0;
  size_t lazy_slot_size_ = 0;  // Lazy pools: for SetUp
  size_t lazy_slot_align_ = 0;
  std::once_flag set_up_once_;
  std::atomic<bool> ready_{false};
  size_t block_size_ = 0;
  size_t header_size_ = 0;  // slots start here, a multiple of the alignment
  size_t slots_per_block_ = 0;
  bool has_bitmap_ = false;  // blocks carry the debug in-use bitmap
  uint32_t num_shards_ = 0;
  uint32_t magazine_size_ = 0;
  uint32_t max_empty_per_shard_ = 0;
  ThreadSlots::Key key_;
  std::unique_ptr<Shard[]> shards_;
  std::atomic<uint32_t> next_home_{0};

  // Lock order: shards in index order, then mu_ (only Trim nests them).
  alignas(64) mutable Mutex mu_;
  uint64_t carved_ ABSL_GUARDED_BY(mu_) = 0;  // carved from live blocks
  BlockHeader* carving_ ABSL_GUARDED_BY(mu_) = nullptr;  // newest block
  std::vector<BlockHeader*> blocks_ ABSL_GUARDED_BY(mu_);
  std::vector<ThreadCache*> caches_ ABSL_GUARDED_BY(mu_);  // live ones
  uint64_t blocks_released_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<uint64_t> lost_{0};  // free slots dropped, see PutItemsLocked
};

}  // namespace arenarpc::internal

#endif  // ARENARPC_INTERNAL_FIXED_POOL_H_
