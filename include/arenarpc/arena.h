// protobuf arenas on pooled pages.
//
//   #include "arenarpc/arena.h"
//
//   arenarpc::ScopedArena arena;                  // a pooled, reset arena
//   auto* req = arena.Create<MyRequest>();        // lives as long as `arena`
//   auto* rsp = arena.Create<MyResponse>();
//   std::pmr::vector<int> ids(arena.memory_resource());  // same pages
//   ...
//   std::unique_ptr<MyResponse> keep = arenarpc::CloneToHeap(*rsp);
//   // ~ScopedArena: destructors run, pages go back to the thread's cache.
//
// Optional, once at start-up, before the first arena:
//
//   arenarpc::ArenaOptions options;
//   options.pages.page_size = 128 << 10;
//   absl::Status s = arenarpc::SetGlobalArenaOptions(options);
//
// How. Arenas get their blocks through the public
// google::protobuf::ArenaOptions hooks (block_alloc/block_dealloc) with
// start_block_size == max_block_size == page size, so every block is one page
// of PagePool::Default(); a single allocation larger than a page gets a block
// of its own from the heap. Arena objects themselves are pooled (a few per
// thread plus a bounded shared list), so ScopedArena neither constructs nor
// destroys a google::protobuf::Arena in the steady state, it only Reset()s
// one. An idle pooled arena keeps one page: protobuf stores the arena's
// allocation policy in its first block.
//
// Misuse. Touching an object after its ScopedArena is gone is undefined
// behaviour, as with any arena, in every build. Under AddressSanitizer it is
// reported as use-after-poison: later pages go back to the page pool, which
// poisons them, and what the scope put on the arena's first page (kept by
// the idle arena) is poisoned until another ScopedArena takes that arena.
// A ScopedArena moved from holds no arena (arena() == nullptr); creating on
// it makes heap objects that nothing owns.
//
// Out of memory. protobuf's block hooks cannot fail, so when the page pool
// returns nullptr (the OS refused a mapping) the arena takes that block from
// the heap (operator new) instead, counted in
// ArenaStats::blocks_from_heap_fallback, and goes back to pages as soon as
// the pool has them again (while any such block is alive, a released arena is
// destroyed rather than kept idle: resetting it would allocate). ScopedArena's
// constructor, Create<T>() and parsing
// into its messages therefore fail only when the heap fails too, and then
// as protobuf's own arenas do: std::bad_alloc.
//
// Kill switch: building with -DARENARPC_DISABLE_ARENAS=ON makes arena()
// return nullptr and Create<T>() allocate on the heap (objects are still
// deleted with the ScopedArena), with no change to user code.
#ifndef ARENARPC_ARENA_H_
#define ARENARPC_ARENA_H_

#include <google/protobuf/arena.h>
#include <google/protobuf/message_lite.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <memory_resource>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "arenarpc/internal/mutex.h"
#include "arenarpc/internal/protobuf_compat.h"
#include "arenarpc/memory_resource.h"
#include "arenarpc/page_pool.h"

namespace arenarpc {

struct ArenaOptions {
  // The options of PagePool::Default(). pages.page_size is also the arena
  // block size: a message larger than a page spans several blocks, and one
  // allocation larger than a page gets a heap block of its own.
  PagePoolOptions pages;
  // Idle arenas kept per thread and process-wide (each holds one page).
  size_t idle_arenas_per_thread = 4;
  size_t idle_arenas_max = 64;
};

// Sets the options of every arena made by arenarpc, and of
// PagePool::Default(). Call it once at start-up. Returns FailedPrecondition,
// changing nothing, once an arena or PagePool::Default() has been used
// (switching page size under live arenas would misroute their blocks), and
// InvalidArgument for invalid options.
absl::Status SetGlobalArenaOptions(const ArenaOptions& options);

// The options in force (the defaults if SetGlobalArenaOptions never ran).
// Once arenas are in use, `pages` are PagePool::Default()'s options,
// whoever configured it: the arena block size is always the page pool's
// page size (one source of truth), so no block misses the pool.
ArenaOptions GetGlobalArenaOptions();

struct ArenaStats {
  uint64_t arenas_acquired = 0;  // ScopedArenas constructed
  uint64_t arenas_created = 0;   // google::protobuf::Arena objects built
  uint64_t arenas_idle = 0;      // kept for reuse now
  // Page-sized blocks come from PagePool::Default(): see its Stats().
  uint64_t blocks_from_heap = 0;  // oversize blocks (one allocation > page)
  uint64_t bytes_from_heap = 0;   // their total size
  // Page-sized blocks taken from the heap because the page pool had none
  // (the OS refused memory): see "Out of memory" above.
  uint64_t blocks_from_heap_fallback = 0;
};
// Creates nothing: before the first arena it returns zeros and leaves
// SetGlobalArenaOptions() usable.
ArenaStats GetArenaStats();

// Destroys the pooled idle arenas (each keeps one page) of every thread
// whose arena cache went unused for `idle_for` (observed across calls, as
// PagePool::ReleaseIdleCaches), and with `idle_for` of zero also the shared
// list's. Returns how many arenas were destroyed. Their pages go back to
// PagePool::Default() through the calling thread's cache; follow with
// PagePool::Default().FlushThreadCache() and Trim() (or ReleaseIdleCaches)
// to unmap them. Thread-safe; never waits for another thread's arena use.
size_t ReleaseIdleArenas(std::chrono::milliseconds idle_for);

namespace internal {
google::protobuf::Arena* AcquireArena();
void ReleaseArena(google::protobuf::Arena* arena);
}  // namespace internal

// A protobuf arena borrowed from arenarpc's pool for one scope.
//
// Thread safety: like google::protobuf::Arena, Create() may be called from
// several threads at once; construction and destruction must not race with
// other uses. A ScopedArena may be destroyed on another thread than the one
// that made it.
// Lifetime: everything created on it is destroyed with it; use CloneToHeap()
// for what must outlive it. Move-only.
class ScopedArena {
 public:
  ScopedArena();
  ~ScopedArena();
  ScopedArena(ScopedArena&& other) noexcept;
  ScopedArena& operator=(ScopedArena&& other) noexcept;
  ScopedArena(const ScopedArena&) = delete;
  ScopedArena& operator=(const ScopedArena&) = delete;

  // The arena, or nullptr when built with ARENARPC_DISABLE_ARENAS.
  google::protobuf::Arena* arena() const { return arena_; }

  // Creates a T owned by this scope: a protobuf message on the arena (its
  // arena constructor), or any other type with its destructor registered.
  template <class T, class... Args>
  T* Create(Args&&... args);

  // A monotonic resource over the same pages, released with the arena. It
  // lives on the arena and follows it: after a move, a resource handed out
  // before allocates on the moved arena (its new owner's); a moved-from
  // ScopedArena's resource aborts on allocation (no arena).
  std::pmr::memory_resource* memory_resource();

  // Bytes of arena blocks in use by this scope (protobuf's SpaceAllocated).
  uint64_t SpaceAllocated() const;

 private:
  void Release();

  google::protobuf::Arena* arena_ = nullptr;
  // Made on *arena_ at the first memory_resource() (so it moves with the
  // arena); atomic: memory_resource() may run on several threads at once.
  std::atomic<ArenaMemoryResource*> resource_{nullptr};
#ifdef ARENARPC_DISABLE_ARENAS
  // Heap objects created while arenas are disabled, deleted in reverse.
  // Locked: Create() may run on several threads, as on a real arena.
  internal::Mutex owned_mu_;
  std::vector<std::pair<void*, void (*)(void*)>> owned_
      ABSL_GUARDED_BY(owned_mu_);
#endif
};

template <class T, class... Args>
T* ScopedArena::Create(Args&&... args) {
#ifdef ARENARPC_DISABLE_ARENAS
  T* object = new T(std::forward<Args>(args)...);
  internal::MutexLock lock(&owned_mu_);
  owned_.emplace_back(object, [](void* p) { delete static_cast<T*>(p); });
  return object;
#else
  return internal::CreateOnArena<T>(arena_, std::forward<Args>(args)...);
#endif
}

// A heap-owned deep copy of `message`, for data that must outlive its arena.
// Works for generated types and for google::protobuf::Message (dynamic).
template <class T>
std::unique_ptr<T> CloneToHeap(const T& message) {
  static_assert(std::is_base_of_v<google::protobuf::MessageLite, T>,
                "CloneToHeap takes a protobuf message");
  std::unique_ptr<T> copy(static_cast<T*>(message.New(nullptr)));
  copy->CheckTypeAndMergeFrom(message);
  return copy;
}

}  // namespace arenarpc

#endif  // ARENARPC_ARENA_H_
