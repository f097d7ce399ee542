// The type-erased engine behind ObjectPool<T> (design: docs/DESIGN.md,
// "Objects"); this header adds the mechanics.
//
//   arenarpc::internal::FixedPool pool(/*slot_size=*/64, /*slot_align=*/8, {});
//   void* p = pool.Allocate();   // nullptr only if the OS refuses memory
//   pool.Deallocate(p);          // from any thread
//
// A block is `block_size` bytes aligned to its size: a header, then slots of
// `stride` bytes; masking a slot's address finds the header. Slots are carved
// a batch at a time, so pages never handed out are never touched. A Lazy
// pool (ObjectPool<T>::Default) is set up by its first slow path.
#ifndef ARENARPC_INTERNAL_FIXED_POOL_H_
#define ARENARPC_INTERNAL_FIXED_POOL_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "arenarpc/internal/check.h"
#include "arenarpc/internal/mutex.h"
#include "arenarpc/internal/thread_slots.h"

namespace arenarpc {
struct ObjectPoolOptions;  // arenarpc/object_pool.h documents both
struct ObjectPoolStats;
}  // namespace arenarpc

namespace arenarpc::internal {

// Test-only: the next `n` magazines the pools would allocate from the heap
// fail instead, as if the heap were exhausted (0: none). Process-wide.
void FailMagazineAllocationsForTest(int n);

struct Magazine;  // an array of free slot pointers, moved by pointer

// One thread's cache for one pool: two magazines (Bonwick's "loaded" and
// "previous"), the loaded one a stack reached through `top`. Pop and Push
// are ObjectPool's whole fast path. Detached (all null), it is empty to Pop
// and full to Push, so it can be a constinit thread_local. Only its thread
// writes it; Stats() reads the atomics.
struct alignas(64) ThreadCache {
  std::atomic<void**> top{nullptr};     // past the loaded magazine's last slot
  std::atomic<void**> base{nullptr};    // loaded->items; null while detached
  void** limit = nullptr;               // base + magazine size
  std::atomic<uint32_t> prev_count{0};  // pointers in `previous`
  uint32_t home = 0;                    // depot shard
  Magazine* loaded = nullptr;           // nullptr while detached
  Magazine* previous = nullptr;
  bool in_tls = false;  // a per-type thread_local: reset, never deleted

  // A free slot, or nullptr if the loaded magazine is empty.
  void* Pop() {
    void** t = top.load(std::memory_order_relaxed);
    if (__builtin_expect(t == base.load(std::memory_order_relaxed), 0)) {
      return nullptr;
    }
    void* p = *--t;
    top.store(t, std::memory_order_relaxed);
    // Caches hold slots only: lets the caller's null test fold away.
    if (p == nullptr) __builtin_unreachable();
    return p;
  }
  // Caches `p`; false if the loaded magazine is full (or the cache detached).
  bool Push(void* p) {
    void** t = top.load(std::memory_order_relaxed);
    if (__builtin_expect(t == limit, 0)) return false;
    *t = p;
    top.store(t + 1, std::memory_order_relaxed);
    return true;
  }
  uint32_t count() const {  // the owning thread only
    return static_cast<uint32_t>(top.load(std::memory_order_relaxed) -
                                 base.load(std::memory_order_relaxed));
  }
  // The owning thread only: `items` (n slots of `capacity`) becomes the
  // loaded stack; Load(nullptr, 0, 0) detaches.
  void Load(void** items, uint32_t n, uint32_t capacity) {
    base.store(items, std::memory_order_relaxed);
    limit = items + capacity;
    top.store(items + n, std::memory_order_relaxed);
  }
  // Any thread: the loaded count, or 0 if `top` and `base` were read across
  // a swap (they then point into different magazines).
  uint32_t CountForStats(uint32_t capacity) const {
    const auto t =
        reinterpret_cast<uintptr_t>(top.load(std::memory_order_relaxed));
    const auto b =
        reinterpret_cast<uintptr_t>(base.load(std::memory_order_relaxed));
    const uintptr_t n = (t - b) / sizeof(void*);
    return t >= b && n <= capacity ? static_cast<uint32_t>(n) : 0;
  }
};

class FixedPool final : private ThreadSlots::Owner {
 public:
  FixedPool(size_t slot_size, size_t slot_align,
            const ObjectPoolOptions& options)
      : stride_(Stride(slot_size, slot_align)), align_(slot_align) {
    Configure(options);
  }
  // Default options, set up on first use, so that it can be constinit. Its
  // owner must never destroy it.
  struct Lazy {};
  constexpr FixedPool(Lazy, size_t slot_size, size_t slot_align)
      : stride_(Stride(slot_size, slot_align)), align_(slot_align) {}
  ~FixedPool();
  FixedPool(const FixedPool&) = delete;
  FixedPool& operator=(const FixedPool&) = delete;

  // Instance path: this thread's cache is found through ThreadSlots.
  void* Allocate() { return AllocateWith(GetCache()); }
  void Deallocate(void* p) { DeallocateWith(GetCache(), p); }

  // With the calling thread's cache for this pool (ObjectPool<T>::Default's
  // thread_local); a null or detached one takes the slow path.
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

  // Aborts if `p` may not be returned (debug builds; ASan builds: a double
  // return). ObjectPool::Delete runs it before ~T, Deallocate too.
  void CheckReturnable(const void* p) const {
#ifdef ARENARPC_ASAN
    ARENARPC_CHECK(!ARENARPC_IS_POISONED(p),
                   "ObjectPool::Delete/Deallocate: object freed twice");
#endif
    if (ARENARPC_DEBUG_CHECKS) DebugCheckReturnable(p);
  }

  void FlushThreadCache();  // this thread's magazines -> depot
  // Unmaps fully free blocks; returns bytes. Unchecked by the thread-safety
  // analysis: it holds every shard, a run-time set of locks.
  size_t Trim() ABSL_NO_THREAD_SAFETY_ANALYSIS;
  ObjectPoolStats Stats() const;

  size_t block_size() const { return Ready().block_size_; }
  size_t slots_per_block() const { return Ready().slots_per_block_; }

 private:
  static constexpr size_t Stride(size_t size, size_t align) {
    size = size == 0 ? 1 : size;
    return align == 0 ? size : (size + align - 1) / align * align;
  }
  struct BlockHeader;

  // The last pool this thread used: one TLS compare instead of a ThreadSlots
  // lookup. Generations are never reused, so a destroyed pool's entry never
  // matches again; kNone matches no key, not even generation 0.
  struct LastUsed {
    uint64_t generation;
    void* cache;
  };
  static constexpr LastUsed kNone{~uint64_t{0}, nullptr};
  static inline thread_local constinit LastUsed last_used_ = kNone;

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

  bool ready() const { return ready_.load(std::memory_order_acquire); }
  const FixedPool& Ready() const {
    if (__builtin_expect(!ready(), 0)) const_cast<FixedPool*>(this)->SetUp();
    return *this;
  }
  void SetUp();  // once; Lazy pools only
  void Configure(const ObjectPoolOptions& options);

  // Inline: a debug caller marks and checks every slot, a release caller
  // none; the bitmap exists only in a debug library (has_bitmap_).
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
  void* AllocateUncached();
  // Gives `c` (nullptr: a new heap cache) magazines and registers it for
  // this thread; nullptr if out of memory or the thread is exiting.
  ThreadCache* Attach(ThreadCache* c);
  void OnThreadExit(void* cache) override;  // its magazines to the depot

  struct Shard;                                    // of the depot
  Magazine* TakeFullFromAnyShard(ThreadCache* c);  // frees c->previous
  size_t CarveLocked(void** out, size_t n)         // 0: no memory
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  BlockHeader* MapBlock();
  void UnmapBlock(BlockHeader* b);
  BlockHeader* HeaderOf(const void* p) const {
    return reinterpret_cast<BlockHeader*>(reinterpret_cast<uintptr_t>(p) &
                                          ~(uintptr_t{block_size_} - 1));
  }

  // Set by the constructor (a Lazy pool: by SetUp), then constant.
  size_t stride_ = 0;
  size_t align_ = 0;
  std::once_flag set_up_once_;
  std::atomic<bool> ready_{false};
  size_t block_size_ = 0;
  size_t header_size_ = 0;  // slots start here, a multiple of the alignment
  size_t slots_per_block_ = 0;
  bool has_bitmap_ = false;  // blocks carry the debug in-use bitmap
  uint32_t num_shards_ = 0;
  uint32_t magazine_size_ = 0;
  ThreadSlots::Key key_;
  Shard* shards_ = nullptr;  // num_shards_ of them
  std::atomic<uint32_t> next_home_{0};

  // Lock order: shards in index order, then mu_ (only Trim nests them).
  alignas(64) mutable Mutex mu_;
  uint64_t carved_ ABSL_GUARDED_BY(mu_) = 0;  // carved from live blocks
  BlockHeader* carving_ ABSL_GUARDED_BY(mu_) = nullptr;  // newest block
  std::vector<BlockHeader*> blocks_ ABSL_GUARDED_BY(mu_);
  std::vector<ThreadCache*> caches_ ABSL_GUARDED_BY(mu_);  // live ones
  uint64_t blocks_released_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace arenarpc::internal

#endif  // ARENARPC_INTERNAL_FIXED_POOL_H_
