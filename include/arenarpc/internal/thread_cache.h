// One thread's cache of free slots for one FixedPool: two magazines of slot
// pointers, the one in use ("loaded") a stack reached through `top`.
//
//   internal::ThreadCache& c = ...;        // this thread's, for one pool
//   if (void* p = c.Pop()) use(p);         // else: FixedPool's slow path
//   if (!c.Push(p)) { /* full or detached: slow path */ }
//
// Pop and Push are the whole fast path of ObjectPool: a load of the stack
// pointer, one compare, one slot load or store and a store of the pointer,
// with no lock, no atomic read-modify-write and no access to the free object
// itself. There is no count: the number of cached slots is derived from the
// pointers when the slow path, Stats() or the exit hook needs it, so an
// operation loads and stores nothing but `top` (and reads `base` or `limit`).
//
// A cache starts detached (all pointers null): Pop sees it empty and Push
// sees it full, so the first use of a cache always takes the slow path,
// which attaches magazines. That is what lets a cache be a constant-
// initialised, trivially destructible `thread_local` (ObjectPool<T>::Default
// keeps one per type): no TLS guard or wrapper call on the fast path.
//
// Thread safety: only the owning thread writes a cache. `top`, `base` and
// `prev_count` are relaxed atomics (plain loads and stores on x86 and ARM)
// because the pool's Stats() reads them from other threads; it may see them
// mid-swap and then counts that magazine as empty (CountForStats). The
// magazine fields are the pool's business (FixedPool), under its rules.
#ifndef ARENARPC_INTERNAL_THREAD_CACHE_H_
#define ARENARPC_INTERNAL_THREAD_CACHE_H_

#include <atomic>
#include <cstdint>

namespace arenarpc::internal {

struct Magazine;  // FixedPool's: an array of slot pointers

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
    --t;
    void* p = *t;
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

  // The owning thread only: slots in the loaded magazine.
  uint32_t count() const {
    return static_cast<uint32_t>(top.load(std::memory_order_relaxed) -
                                 base.load(std::memory_order_relaxed));
  }
  // The owning thread only: makes `items` (n slots of `capacity`) the loaded
  // stack; Load(nullptr, 0, 0) detaches.
  void Load(void** items, uint32_t n, uint32_t capacity) {
    base.store(items, std::memory_order_relaxed);
    limit = items + capacity;
    top.store(items + n, std::memory_order_relaxed);
  }
  // Any thread: slots in the loaded magazine, or 0 if the two pointers were
  // read across a swap (they then belong to different magazines).
  uint32_t CountForStats(uint32_t capacity) const {
    const auto t =
        reinterpret_cast<uintptr_t>(top.load(std::memory_order_relaxed));
    const auto b =
        reinterpret_cast<uintptr_t>(base.load(std::memory_order_relaxed));
    const uintptr_t n = (t - b) / sizeof(void*);
    return t >= b && n <= capacity ? static_cast<uint32_t>(n) : 0;
  }
};

}  // namespace arenarpc::internal

#endif  // ARENARPC_INTERNAL_THREAD_CACHE_H_
