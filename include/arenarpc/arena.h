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
// Every block is a page of PagePool::Default(); idle arenas are pooled
// (one page each). Why: docs/DESIGN.md ("Arenas: ScopedArena").
// Out of memory: a page the pool lacks comes from the heap (counted), so
// only a failing heap fails: std::bad_alloc, as protobuf's own arenas.
// Misuse: an object used after its scope is undefined behaviour (ASan:
// use-after-poison); a moved-from ScopedArena's Create() makes unowned heap
// objects. Kill switch: -DARENARPC_DISABLE_ARENAS=ON makes arena() nullptr
// and Create<T>() allocate on the heap (deleted with the scope).
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
  PagePoolOptions pages;  // PagePool::Default()'s; page_size = block size
  size_t idle_arenas_per_thread = 4;  // idle arenas kept (one page each)
  size_t idle_arenas_max = 64;        // and process-wide beyond those
};

// Sets the options of every arena and of PagePool::Default(), once at
// start-up: FailedPrecondition (nothing changed) once either was used;
// InvalidArgument for invalid options.
absl::Status SetGlobalArenaOptions(const ArenaOptions& options);
// The options in force (once arenas are used, PagePool::Default()'s pages).
ArenaOptions GetGlobalArenaOptions();

struct ArenaStats {
  uint64_t arenas_acquired = 0;   // ScopedArenas constructed
  uint64_t arenas_created = 0;    // google::protobuf::Arena objects built
  uint64_t arenas_idle = 0;       // kept for reuse now
  uint64_t blocks_from_heap = 0;  // oversize blocks (one allocation > page)
  uint64_t bytes_from_heap = 0;   // their total size
  uint64_t blocks_from_heap_fallback = 0;  // the page pool had no page
};
// Creates nothing (zeros before the first arena).
ArenaStats GetArenaStats();

// Destroys the idle arenas of thread caches unused for `idle_for` (as
// PagePool::ReleaseIdleCaches; zero: also the shared list's); returns how
// many. Their pages go to this thread's page cache.
size_t ReleaseIdleArenas(std::chrono::milliseconds idle_for);

// A protobuf arena borrowed from arenarpc's pool for one scope.
// Thread safety: as google::protobuf::Arena, Create() may run on several
// threads at once, construction and destruction on any one thread.
// Lifetime: what is created on it is destroyed with it (CloneToHeap() for
// what must outlive it). Move-only.
class ScopedArena {
 public:
  ScopedArena();
  ~ScopedArena() { Release(); }
  ScopedArena(ScopedArena&& other) noexcept { *this = std::move(other); }
  ScopedArena& operator=(ScopedArena&& other) noexcept;
  ScopedArena(const ScopedArena&) = delete;
  ScopedArena& operator=(const ScopedArena&) = delete;

  // The arena, or nullptr when built with ARENARPC_DISABLE_ARENAS.
  google::protobuf::Arena* arena() const { return arena_; }

  // A T owned by this scope: a message on the arena, or another type with
  // its destructor registered.
  template <class T, class... Args>
  T* Create(Args&&... args);

  // A monotonic resource over the same pages, released with the arena; it
  // follows the arena when moved (a moved-from one's aborts on use).
  std::pmr::memory_resource* memory_resource();

  // protobuf's SpaceAllocated(): bytes of this arena's blocks.
  uint64_t SpaceAllocated() const {
    return arena_ != nullptr ? arena_->SpaceAllocated() : 0;
  }

 private:
  void Release();

  google::protobuf::Arena* arena_ = nullptr;
  // Made on *arena_ by the first memory_resource(), which may run on
  // several threads at once.
  std::atomic<ArenaMemoryResource*> resource_{nullptr};
#ifdef ARENARPC_DISABLE_ARENAS
  // Heap objects, deleted in reverse; Create() may run on several threads.
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

// A heap-owned deep copy of `message` (generated or dynamic), for data that
// must outlive its arena.
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
