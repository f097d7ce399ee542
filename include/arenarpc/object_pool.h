// A thread-caching pool of fixed-size objects of one type.
//
//   // The per-type pool: the fastest path, nothing to construct or pass.
//   auto& pool = arenarpc::ObjectPool<Request>::Default();
//   Request* r = pool.New(/*id=*/42, "payload");  // in pooled memory
//   ...
//   pool.Delete(r);                  // destroyed; any thread may do this
//
//   // An instance: its own memory, options, Stats() and destructor.
//   arenarpc::ObjectPool<Request> mine;
//   void* raw = mine.Allocate();     // uninitialised, sizeof(Request) bytes
//   mine.Deallocate(raw);
//
//   arenarpc::ObjectPoolStats s = pool.Stats();  // one lock, no walk
//   pool.Trim();                     // gives fully free blocks back to the OS
//
//   // In arenarpc::PrometheusText():
//   #include "arenarpc/metrics.h"
//   arenarpc::RegisterObjectPoolStats("my.Request", &pool);
//
// Design: docs/DESIGN.md, "Objects".
//
// Thread safety: every member function may be called from any thread, and
// an object may be deleted by another thread than the one that made it:
// memory stays bounded by the objects in flight plus 2 * magazine_size per
// thread.
//
// Lifetime: an exiting thread hands its cache to the depot. An instance must
// outlive its objects: its destructor unmaps all blocks without running the
// destructors of objects not yet deleted.
//
// Misuse (a double Delete/Deallocate, another pool's object or an interior
// address, use after Delete) is undefined in release builds; debug and ASan
// builds catch it (docs/DESIGN.md, "Misuse").
// Out of memory: New() throws std::bad_alloc (aborts without exceptions),
// Allocate() returns nullptr. If the heap refuses the few KiB of a magazine,
// a thread works uncached, and a freed object with no magazine to go to is
// dropped, counted in Stats().objects_lost.
#ifndef ARENARPC_OBJECT_POOL_H_
#define ARENARPC_OBJECT_POOL_H_

#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>

#include "arenarpc/internal/fixed_pool.h"

namespace arenarpc {

struct ObjectPoolOptions {
  // Bytes per block: a power of two, at least 64 KiB (raised to hold 16
  // objects). Trim() returns memory in whole blocks.
  size_t block_size = size_t{256} << 10;
  // Free objects per magazine; a thread caches at most two magazines. Larger
  // means fewer depot trips, more memory parked per thread.
  uint32_t magazine_size = 256;
  // Spare (empty) magazines the depot keeps at least; a shard also keeps as
  // many as it held full at its peak since the last Trim(), which frees them.
  uint32_t max_empty_magazines = 256;
  // Depot shards, each with its own lock; a thread uses its home shard and
  // steals from the others only when that is empty. 0: twice the hardware
  // threads, clamped to [4, 64].
  uint32_t depot_shards = 0;
};

// A snapshot. Thread caches are read without stopping their threads, so under
// concurrent use the counts may be off by a few objects.
struct ObjectPoolStats {
  size_t object_stride = 0;       // bytes per object slot
  uint64_t objects_in_use = 0;    // created and not yet deleted
  uint64_t objects_cached = 0;    // free: in thread caches and the depot
  uint64_t objects_in_depot = 0;  // the part of objects_cached in the depot
  uint64_t blocks_held = 0;       // blocks mapped now
  uint64_t bytes_held = 0;        // blocks_held * block size
  uint64_t blocks_released = 0;   // unmapped by Trim() since construction
  // Freed objects dropped (see "Out of memory" above): not in use, not cached.
  uint64_t objects_lost = 0;
};

template <class T>
class ObjectPool;

namespace internal {
// Removes a destroyed pool from the stats registry (src/metrics.cc); cheap
// when no pool was ever registered.
void NotifyObjectPoolDestroyed(const void* pool);

// Storage of ObjectPool<T>::Default(): a union, so that no destructor runs
// at exit (threads and static destructors may still use the pool).
template <class T>
union DefaultObjectPool {
  constexpr DefaultObjectPool() : pool(typename ObjectPool<T>::DefaultTag{}) {}
  ~DefaultObjectPool() {}
  ObjectPool<T> pool;
};
template <class T>
constinit inline DefaultObjectPool<T> default_object_pool;
}  // namespace internal

template <class T>
class ObjectPool {
  static_assert(alignof(T) <= 4096, "ObjectPool: alignment above 4096");

 public:
  explicit ObjectPool(const ObjectPoolOptions& options = {})
      : pool_(sizeof(T), alignof(T), options) {}
  // Unmaps all memory; see "Lifetime" above. Leaves the stats registry
  // (arenarpc/metrics.h) first.
  ~ObjectPool() { internal::NotifyObjectPoolDestroyed(this); }
  ObjectPool(const ObjectPool&) = delete;
  ObjectPool& operator=(const ObjectPool&) = delete;

  // The per-type pool: default options, a thread_local cache (the fastest
  // path), constant-initialised (usable from static initialisers and
  // destructors), free to call (a constant address), never destroyed.
  static ObjectPool& Default() { return internal::default_object_pool<T>.pool; }

  // Constructs a T from `args` in pooled memory. Throws std::bad_alloc if the
  // OS refuses memory; if T's constructor throws, the slot goes back.
  template <class... Args>
  T* New(Args&&... args) {
    void* p = Allocate();
    if (__builtin_expect(p == nullptr, 0)) OutOfMemory();
#if defined(__cpp_exceptions)
    try {
      return ::new (p) T(std::forward<Args>(args)...);
    } catch (...) {
      Deallocate(p);
      throw;
    }
#else
    return ::new (p) T(std::forward<Args>(args)...);
#endif
  }

  // Destroys and frees an object from this pool's New(). Null is a no-op.
  void Delete(T* p) {
    if (p == nullptr) return;
    pool_.CheckReturnable(p);  // before ~T runs a second time
    p->~T();
    Deallocate(p);
  }

  // An uninitialised slot of sizeof(T) bytes aligned for T, or nullptr if the
  // OS refuses memory.
  void* Allocate() {
    // Folds away when the pool is Default() or a known instance.
    if (IsDefault()) return pool_.AllocateWith(DefaultCache());
    return pool_.Allocate();
  }
  // Frees a slot from Allocate() (or a New() object whose destructor the
  // caller already ran).
  void Deallocate(void* p) {
    if (IsDefault()) return pool_.DeallocateWith(DefaultCache(), p);
    pool_.Deallocate(p);
  }

  ObjectPoolStats Stats() const { return pool_.Stats(); }

  // Unmaps every block whose objects are all free in the depot, after moving
  // this thread's cache there. Returns the bytes given back to the OS.
  // Default() too: its blocks go back, the pool stays usable.
  size_t Trim() { return pool_.Trim(); }
  // Moves this thread's cached objects to the depot (e.g. before the thread
  // idles for long, so that Trim() can return their blocks).
  void FlushThreadCache() { pool_.FlushThreadCache(); }

  size_t block_size() const { return pool_.block_size(); }
  size_t objects_per_block() const { return pool_.slots_per_block(); }

 private:
  friend union internal::DefaultObjectPool<T>;
  struct DefaultTag {};
  constexpr explicit ObjectPool(DefaultTag)
      : pool_(internal::FixedPool::Lazy{}, sizeof(T), alignof(T)) {}

  bool IsDefault() const { return this == &Default(); }

  // This thread's Default() cache through a register: the empty asm makes
  // the compiler compute the TLS address once per loop (docs/DESIGN_NOTES.md).
  static internal::ThreadCache* DefaultCache() {
    internal::ThreadCache* c = &default_cache_;
#if defined(__GNUC__)
    asm("" : "+r"(c));
#endif
    if (c == nullptr) __builtin_unreachable();  // keeps the fast path's tests
    return c;
  }

  [[noreturn]] static void OutOfMemory() {
#if defined(__cpp_exceptions)
    throw std::bad_alloc();
#else
    internal::CheckFailed(__FILE__, __LINE__, "ObjectPool::New: out of memory");
#endif
  }

  internal::FixedPool pool_;

  // Default()'s cache for this thread: constinit and trivially destructible,
  // so no TLS guard; its magazines go back at thread exit.
  static inline thread_local constinit internal::ThreadCache default_cache_;
};

}  // namespace arenarpc

#endif  // ARENARPC_OBJECT_POOL_H_
