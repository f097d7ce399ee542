// Thread-caching free list of opaque items, with a bounded shared depot.
//
//   class PageSource : public arenarpc::internal::PointerCache {
//    public:
//     PageSource() : PointerCache(/*thread_capacity=*/16, /*depot=*/1024) {}
//     ~PageSource() override { Shutdown(); }
//    protected:
//     size_t Make(void** out, size_t n) override;        // e.g. mmap n pages
//     void Destroy(void* const* items, size_t n) override;  // e.g. munmap
//   };
//   void* p = source.Pop();  ...  source.Push(p);
//
// Behind PagePool, the arena pool and MessagePool: a per-thread LIFO stack
// of `thread_capacity` items; an empty stack refills with half a stack from
// the depot or Make(), a full one sends its colder half to the depot, which
// keeps `depot_capacity` items and Destroy()s the rest. With a
// `decay_period`, what a burst built does not stay for good (Decay()).
//
// Thread safety: all public functions, from any thread; Make/Destroy run
// without internal locks. A thread writes its stack under the stack's `busy`
// flag (uncontended: ReleaseIdle only try-locks it), so others can empty it.
// Lifetime: a subclass calls Shutdown() in its destructor (Destroy is
// virtual). An exiting thread's stack goes to the depot.
#ifndef ARENARPC_SRC_INTERNAL_POINTER_CACHE_H_
#define ARENARPC_SRC_INTERNAL_POINTER_CACHE_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "arenarpc/internal/mutex.h"
#include "arenarpc/internal/thread_slots.h"

namespace arenarpc::internal {

struct PointerCacheStats {
  uint64_t in_depot = 0;
  uint64_t in_threads = 0;  // in all thread stacks
  uint64_t hits = 0;        // Pop() served by the thread stack
  uint64_t misses = 0;      // Pop() that went to the depot or Make()
};

class PointerCache : private ThreadSlots::Owner {
 public:
  PointerCache(size_t thread_capacity, size_t depot_capacity,
               std::chrono::nanoseconds decay_period = {});
  virtual ~PointerCache() { ThreadSlots::Unregister(key_); }
  PointerCache(const PointerCache&) = delete;
  PointerCache& operator=(const PointerCache&) = delete;

  // An item, or nullptr if Make() produced none.
  void* Pop() {
    Stack* s = static_cast<Stack*>(ThreadSlots::Get(key_));
    if (__builtin_expect(s != nullptr, 1) && s->TryLock()) {
      const uint32_t n = s->count.load(std::memory_order_relaxed);
      if (__builtin_expect(n > 0, 1)) {
        s->count.store(n - 1, std::memory_order_relaxed);
        Bump(s->hits);
        void* item = s->items[n - 1];
        s->unlock();
        return item;
      }
      s->unlock();
    }
    return PopSlow(s);
  }

  void Push(void* item) {
    Stack* s = static_cast<Stack*>(ThreadSlots::Get(key_));
    if (__builtin_expect(s != nullptr, 1) && s->TryLock()) {
      const uint32_t n = s->count.load(std::memory_order_relaxed);
      if (__builtin_expect(n < thread_capacity_, 1)) {
        s->items[n] = item;
        s->count.store(n + 1, std::memory_order_relaxed);
        const bool tick = (++s->pushes & 15) == 0;
        s->unlock();
        if (__builtin_expect(tick, 0)) MaybeDecay();
        return;
      }
      s->unlock();
    }
    PushSlow(s, item);
  }

  void FlushThisThread();  // this thread's stack -> depot
  size_t DrainDepot();     // Destroy()s everything in the depot; how many
  // Destroy()s the items of every stack no Pop/Push changed for `idle_for`
  // (from the first call that finds it unchanged; zero: every stack not in
  // use now), stopping once it took `max_items` (or memory for the list ran
  // out; the rest wait for a later call); returns how many.
  size_t ReleaseIdle(std::chrono::nanoseconds idle_for,
                     size_t max_items = ~size_t{0}) ABSL_LOCKS_EXCLUDED(mu_);
  // One decay tick, whatever the time: Destroy()s the depot's items no Pop
  // reached since the last tick, at most 64 (the rest 1/16 of a period on),
  // then, if none are left, the stacks unchanged for a period. Never throws
  // (it runs in destructors). Returns how many; *more: it stopped at 64 with
  // unreached depot items left.
  size_t Decay(bool* more = nullptr) ABSL_LOCKS_EXCLUDED(mu_);
  PointerCacheStats Stats() const;

 protected:
  // Both run without mu_: they may map, unmap or run destructors.
  // Creates up to `n` (>= 1) items into `out`; returns how many.
  virtual size_t Make(void** out, size_t n) ABSL_LOCKS_EXCLUDED(mu_) = 0;
  virtual void Destroy(void* const* items, size_t n)
      ABSL_LOCKS_EXCLUDED(mu_) = 0;
  // Destroys every cached item; no Pop/Push may run during or after it.
  void Shutdown();

 private:
  // One per (cache, thread), a spin lock (`busy`). Only the owning thread
  // writes the counters; others read them, hence relaxed atomics.
  struct ABSL_LOCKABLE Stack {
    explicit Stack(size_t capacity) : items(new void*[capacity]) {}
    ~Stack() { delete[] items; }
    bool TryLock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) {
      return !busy.exchange(true, std::memory_order_acquire);
    }
    // Spins: ReleaseIdle holds it for a copy of `count` items.
    void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
      while (!TryLock()) std::this_thread::yield();
    }
    void unlock() ABSL_UNLOCK_FUNCTION() {
      busy.store(false, std::memory_order_release);
    }

    std::atomic<bool> busy{false};  // guards count and items
    std::atomic<uint32_t> count{0};
    std::atomic<uint64_t> hits{0};
    std::atomic<uint64_t> misses{0};
    void** const items ABSL_PT_GUARDED_BY(this);  // [count - 1]: hottest
    // ReleaseIdle's view of the stack, guarded by the cache's mu_.
    uint64_t seen_pops = 0;  // hits + misses
    uint32_t seen_count = 0;
    std::chrono::steady_clock::time_point unchanged_since;
    uint32_t pushes ABSL_GUARDED_BY(this) = 0;  // paces the decay check
  };

  // Unlocks also when Make() or the depot throws (else this thread's next
  // Pop/Push would spin forever).
  using StackLock = ScopedLock<Stack>;

  static void Bump(std::atomic<uint64_t>& c) {
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  void OnThreadExit(void* stack) override;
  Stack* StackForThisThread() ABSL_LOCKS_EXCLUDED(mu_);
  void* PopSlow(Stack* s);
  void PushSlow(Stack* s, void* item);
  void ToDepot(void* const* items, size_t n)  // Destroy()s the overflow
      ABSL_LOCKS_EXCLUDED(mu_);
  size_t FromDepot(void** out, size_t n) ABSL_LOCKS_EXCLUDED(mu_);  // <= n
  // Decay() if a period has passed since the last tick (one caller wins).
  void MaybeDecay() ABSL_LOCKS_EXCLUDED(mu_);
  static constexpr size_t kDecayBatch = 64;

  const uint32_t thread_capacity_;
  const size_t batch_;
  const size_t depot_capacity_;
  const std::chrono::nanoseconds decay_period_;  // zero: no decay
  std::atomic<int64_t> next_decay_ns_;           // steady clock
  const ThreadSlots::Key key_;

  mutable Mutex mu_;
  std::vector<void*> depot_ ABSL_GUARDED_BY(mu_);
  // The depot's lowest size since the last decay tick: that many items at
  // its bottom waited through the whole period.
  size_t depot_low_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<Stack*> stacks_ ABSL_GUARDED_BY(mu_);  // live thread stacks
  uint64_t retired_hits_ ABSL_GUARDED_BY(mu_) = 0;   // of exited threads
  uint64_t retired_misses_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace arenarpc::internal

#endif  // ARENARPC_SRC_INTERNAL_POINTER_CACHE_H_
