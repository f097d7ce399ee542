// One thread's cache of free slots for one FixedPool: two magazines of slot
// pointers, the one in use ("loaded") reachable in one load.
//
//   internal::ThreadCache& c = ...;        // this thread's, for one pool
//   if (void* p = c.Pop()) use(p);         // else: FixedPool's slow path
//   if (!c.Push(p)) { /* full or detached: slow path */ }
//
// Pop and Push are the whole fast path of ObjectPool: a count load, one
// compare, one pointer load or store and a count store, with no lock, no
// atomic read-modify-write and no access to the free object itself.
//
// A cache starts detached (capacity 0, no magazines): Pop sees it empty and
// Push sees it full, so the first use of a cache always takes the slow path,
// which attaches magazines. That is what lets a cache be a constant-
// initialised, trivially destructible `thread_local` (ObjectPool<T>::Default
// keeps one per type): no TLS guard or wrapper call on the fast path.
//
// Thread safety: only the owning thread writes a cache. The counts are
// relaxed atomics (plain loads and stores on x86 and ARM) because the pool's
// Stats() reads them from other threads. The magazine fields are the pool's
// business (FixedPool), under its rules.
#ifndef ARENARPC_INTERNAL_THREAD_CACHE_H_
#define ARENARPC_INTERNAL_THREAD_CACHE_H_

#include <atomic>
#include <cstdint>

namespace arenarpc::internal {

struct Magazine;  // FixedPool's: an array of slot pointers

struct alignas(64) ThreadCache {
  std::atomic<uint32_t> count{0};       // pointers in `items`
  uint32_t capacity = 0;                // magazine size; 0 while detached
  void** items = nullptr;               // loaded->items
  std::atomic<uint32_t> prev_count{0};  // pointers in `previous`
  uint32_t home = 0;                    // depot shard
  Magazine* loaded = nullptr;           // nullptr while detached
  Magazine* previous = nullptr;
  bool in_tls = false;  // a per-type thread_local: reset, never deleted

  // A free slot, or nullptr if the loaded magazine is empty.
  void* Pop() {
    const uint32_t n = count.load(std::memory_order_relaxed);
    if (__builtin_expect(n == 0, 0)) return nullptr;
    void* p = items[n - 1];
    count.store(n - 1, std::memory_order_relaxed);
    // Caches hold slots only: lets the caller's null test fold into n == 0.
    if (p == nullptr) __builtin_unreachable();
    return p;
  }

  // Caches `p`; false if the loaded magazine is full (or the cache detached).
  bool Push(void* p) {
    const uint32_t n = count.load(std::memory_order_relaxed);
    if (__builtin_expect(n == capacity, 0)) return false;
    items[n] = p;
    count.store(n + 1, std::memory_order_relaxed);
    return true;
  }
};

}  // namespace arenarpc::internal

#endif  // ARENARPC_INTERNAL_THREAD_CACHE_H_
