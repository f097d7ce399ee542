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
// The one mechanism behind PagePool (pages) and the arena pool (Arena
// objects): a per-thread LIFO stack of `thread_capacity` items; an empty
// stack refills with a batch (half a stack) from the depot or from Make(); a
// full one sends its colder half to the depot; the depot keeps at most
// `depot_capacity` items and Destroy()s the rest. An exiting thread's stack
// goes to the depot.
//
// Thread safety: Pop/Push/FlushThisThread/DrainDepot/GetCounts may be called
// concurrently from any thread; an item may be pushed by another thread than
// the one that popped it. Make/Destroy are called without internal locks.
// Lifetime: a subclass must call Shutdown() in its destructor (Destroy is
// virtual and cannot run from the base destructor).
#ifndef ARENARPC_INTERNAL_POINTER_CACHE_H_
#define ARENARPC_INTERNAL_POINTER_CACHE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "arenarpc/internal/thread_slots.h"

namespace arenarpc::internal {

class PointerCache : private ThreadSlots::Owner {
 public:
  struct Counts {
    uint64_t in_depot = 0;
    uint64_t in_threads = 0;  // in all thread stacks
    uint64_t hits = 0;        // Pop() served by the thread stack
    uint64_t misses = 0;      // Pop() that went to the depot or Make()
  };

  PointerCache(size_t thread_capacity, size_t depot_capacity);
  virtual ~PointerCache();
  PointerCache(const PointerCache&) = delete;
  PointerCache& operator=(const PointerCache&) = delete;

  // An item, or nullptr if Make() produced none.
  void* Pop() {
    Stack* s = static_cast<Stack*>(ThreadSlots::Get(key_));
    if (__builtin_expect(s != nullptr, 1)) {
      const uint32_t n = s->count.load(std::memory_order_relaxed);
      if (__builtin_expect(n > 0, 1)) {
        s->count.store(n - 1, std::memory_order_relaxed);
        Bump(s->hits);
        return s->items[n - 1];
      }
    }
    return PopSlow(s);
  }

  void Push(void* item) {
    Stack* s = static_cast<Stack*>(ThreadSlots::Get(key_));
    if (__builtin_expect(s != nullptr, 1)) {
      const uint32_t n = s->count.load(std::memory_order_relaxed);
      if (__builtin_expect(n < thread_capacity_, 1)) {
        s->items[n] = item;
        s->count.store(n + 1, std::memory_order_relaxed);
        return;
      }
    }
    PushSlow(s, item);
  }

  void FlushThisThread();  // this thread's stack -> depot
  void DrainDepot();       // Destroy() everything in the depot
  Counts GetCounts() const;

 protected:
  // Creates up to `n` (>= 1) items into `out`; returns how many.
  virtual size_t Make(void** out, size_t n) = 0;
  virtual void Destroy(void* const* items, size_t n) = 0;
  // Destroys every cached item; no Pop/Push may run during or after it.
  void Shutdown();

 private:
  // One per (cache, thread). Only the owning thread writes; GetCounts()
  // reads from other threads, hence relaxed atomics updated by load+store.
  struct Stack {
    explicit Stack(size_t capacity) : items(new void*[capacity]) {}
    ~Stack() { delete[] items; }
    std::atomic<uint32_t> count{0};
    std::atomic<uint64_t> hits{0};
    std::atomic<uint64_t> misses{0};
    void** const items;  // items[count - 1] is the hottest
  };

  static void Bump(std::atomic<uint64_t>& c) {
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  void OnThreadExit(void* stack) override;
  Stack* StackForThisThread();
  void* PopSlow(Stack* s);
  void PushSlow(Stack* s, void* item);
  void ToDepot(void* const* items, size_t n);  // Destroy()s the overflow

  const uint32_t thread_capacity_;
  const size_t batch_;
  const size_t depot_capacity_;
  const ThreadSlots::Key key_;

  mutable std::mutex mu_;
  std::vector<void*> depot_;    // guarded by mu_
  std::vector<Stack*> stacks_;  // live thread stacks, guarded by mu_
  uint64_t retired_hits_ = 0;   // of exited threads, guarded by mu_
  uint64_t retired_misses_ = 0;  // guarded by mu_
};

}  // namespace arenarpc::internal

#endif  // ARENARPC_INTERNAL_POINTER_CACHE_H_
