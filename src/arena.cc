#include "arenarpc/arena.h"

#include <atomic>
#include <new>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "absl/base/thread_annotations.h"
#include "arenarpc/internal/check.h"
#include "arenarpc/internal/mutex.h"
#include "arenarpc/page_pool.h"
#include "src/internal/pointer_cache.h"

namespace arenarpc {
namespace {

internal::Mutex options_mu;
ArenaOptions global_options ABSL_GUARDED_BY(options_mu);
bool options_frozen ABSL_GUARDED_BY(options_mu) = false;

// Read by the block hooks, which are plain function pointers with no
// context; written once, before the first arena exists.
PagePool* block_pool = nullptr;
size_t block_size = 0;
std::atomic<uint64_t> heap_blocks{0};
std::atomic<uint64_t> heap_bytes{0};

#ifdef ARENARPC_ASAN
// What the block hooks saw on this thread, for ReleaseArena and Make (below):
// the page handed out last, and whether `watched_page` was returned.
thread_local void* last_page = nullptr;
thread_local void* watched_page = nullptr;
thread_local bool watched_page_freed = false;
#endif

// Blocks taken from the heap because the page pool had none (the OS refused
// memory): protobuf's block hooks cannot fail, and a page-sized block comes
// back with the page size, so these are remembered by address. The set is
// only looked at while one is alive.
std::atomic<uint64_t> fallback_live{0};
std::atomic<uint64_t> fallback_total{0};
internal::Mutex fallback_mu;
std::unordered_set<void*>* fallback_set ABSL_GUARDED_BY(fallback_mu)
    ABSL_PT_GUARDED_BY(fallback_mu) = nullptr;

[[gnu::noinline, gnu::cold]] void* FallbackBlock(size_t size) {
  void* block = ::operator new(size);  // std::bad_alloc if the heap fails too
  try {
    internal::MutexLock lock(&fallback_mu);
    if (fallback_set == nullptr) fallback_set = new std::unordered_set<void*>;
    fallback_set->insert(block);
  } catch (...) {
    ::operator delete(block);
    throw;
  }
  fallback_live.fetch_add(1, std::memory_order_relaxed);
  fallback_total.fetch_add(1, std::memory_order_relaxed);
  return block;
}

[[gnu::noinline, gnu::cold]] bool FreeIfFallback(void* block) {
  {
    internal::MutexLock lock(&fallback_mu);
    if (fallback_set == nullptr || fallback_set->erase(block) == 0)
      return false;
  }
  fallback_live.fetch_sub(1, std::memory_order_relaxed);
  ::operator delete(block);
  return true;
}

void* BlockAlloc(size_t size) {
  if (__builtin_expect(size == block_size, 1)) {
    void* page = block_pool->Allocate();
    if (__builtin_expect(page != nullptr, 1)) {
#ifdef ARENARPC_ASAN
      last_page = page;
#endif
      return page;
    }
    return FallbackBlock(size);
  }
  // One allocation larger than a page: a block of its own from the heap.
  void* block = ::operator new(size);  // std::bad_alloc, as protobuf's own
  heap_blocks.fetch_add(1, std::memory_order_relaxed);
  heap_bytes.fetch_add(size, std::memory_order_relaxed);
  return block;
}

void BlockDealloc(void* block, size_t size) {
  // protobuf passes back the size it got from BlockAlloc.
  if (__builtin_expect(size == block_size, 1)) {
#ifdef ARENARPC_ASAN
    if (block == watched_page) watched_page_freed = true;
#endif
    if (__builtin_expect(fallback_live.load(std::memory_order_relaxed) == 0,
                         1) ||
        !FreeIfFallback(block)) {
      block_pool->Deallocate(block);
    }
  } else {
    ::operator delete(block);
  }
}

#ifdef ARENARPC_ASAN
// An idle arena keeps one page, its first block, and the page pool's poison
// never covers it: protobuf 3.21's Reset() returns it and takes a new one
// (from the LIFO cache: the same page, unpoisoned as a whole), later ones
// keep it. So what the last use put there would stay readable. While an
// arena is idle nothing reads that page, so it is poisoned here, and
// unpoisoned when the arena is taken again. First pages are kept per arena
// (ASan builds only: a lock is fine).
internal::Mutex first_pages_mu;
auto* const first_pages ABSL_PT_GUARDED_BY(first_pages_mu) =
    new std::unordered_map<const google::protobuf::Arena*, void*>;

void* FirstPage(const google::protobuf::Arena* arena) {
  internal::MutexLock lock(&first_pages_mu);
  auto it = first_pages->find(arena);
  return it == first_pages->end() ? nullptr : it->second;
}

// page: the arena's first page, nullptr if unknown (then nothing is poisoned).
// Never throws: when the heap fails (tests inject that) the arena is just
// not tracked, and its first page not poisoned.
void SetFirstPage(const google::protobuf::Arena* arena, void* page) noexcept {
  internal::MutexLock lock(&first_pages_mu);
  if (page != nullptr) {
    try {
      (*first_pages)[arena] = page;
      return;
    } catch (const std::bad_alloc&) {
    }
  }
  first_pages->erase(arena);
}

void PoisonFirstPage(const google::protobuf::Arena* arena, bool poison) {
  void* page = FirstPage(arena);
  if (page == nullptr) return;
  if (poison) {
    ARENARPC_POISON(page, block_size);
  } else {
    ARENARPC_UNPOISON(page, block_size);
  }
}
#endif

void UnpoisonIdle(const google::protobuf::Arena* arena) {
#ifdef ARENARPC_ASAN
  PoisonFirstPage(arena, false);
#else
  (void)arena;
#endif
}

// Idle google::protobuf::Arena objects, reset and ready.
class ArenaCache final : public internal::PointerCache {
 public:
  explicit ArenaCache(const ArenaOptions& o)
      : PointerCache(o.idle_arenas_per_thread, o.idle_arenas_max) {
    options_.start_block_size = o.pages.page_size;
    options_.max_block_size = o.pages.page_size;
    options_.block_alloc = &BlockAlloc;
    options_.block_dealloc = &BlockDealloc;
  }
  ~ArenaCache() override { Shutdown(); }
  uint64_t created() const { return created_.load(std::memory_order_relaxed); }

 protected:
  size_t Make(void** out, size_t n) override {
    // One at a time: building arenas ahead would only hold pages idle.
    (void)n;
#ifdef ARENARPC_ASAN
    last_page = nullptr;
    auto* arena = new google::protobuf::Arena(options_);
    SetFirstPage(arena, last_page);  // protobuf takes it in the constructor
    out[0] = arena;
#else
    out[0] = new google::protobuf::Arena(options_);
#endif
    created_.fetch_add(1, std::memory_order_relaxed);
    return 1;
  }
  void Destroy(void* const* arenas, size_t n) override {
    for (size_t i = 0; i < n; ++i) {
      auto* arena = static_cast<google::protobuf::Arena*>(arenas[i]);
      UnpoisonIdle(arena);
#ifdef ARENARPC_ASAN
      SetFirstPage(arena, nullptr);
#endif
      delete arena;
    }
  }

 private:
  google::protobuf::ArenaOptions options_;
  std::atomic<uint64_t> created_{0};
};

// Cache() once made; stats read it, so that reading them neither freezes
// the options nor creates PagePool::Default().
std::atomic<ArenaCache*> cache_made{nullptr};

ArenaCache& Cache() {
  static ArenaCache* const cache = [] {
    internal::MutexLock lock(&options_mu);
    options_frozen = true;
    // One source of truth for the block size: the page pool's, whoever
    // configured it (SetGlobalArenaOptions or PagePool::ConfigureDefault).
    // Arena blocks of another size would all miss the pool and go to malloc.
    block_pool = &PagePool::Default();
    global_options.pages = block_pool->options();
    block_size = global_options.pages.page_size;
    auto* made = new ArenaCache(global_options);  // leaked: outlives threads
    cache_made.store(made, std::memory_order_release);
    return made;
  }();
  return *cache;
}

}  // namespace

absl::Status SetGlobalArenaOptions(const ArenaOptions& options) {
  if (options.idle_arenas_per_thread > 4096 ||
      options.idle_arenas_max > (1 << 20)) {
    return absl::InvalidArgumentError(
        "idle_arenas_per_thread must be <= 4096 and idle_arenas_max <= 2^20");
  }
  internal::MutexLock lock(&options_mu);
  if (options_frozen) {
    return absl::FailedPreconditionError(
        "SetGlobalArenaOptions: arenas are already in use; call it once at "
        "start-up, before the first ScopedArena");
  }
  absl::Status status = PagePool::ConfigureDefault(options.pages);
  if (!status.ok()) return status;
  global_options = options;
  return absl::OkStatus();
}

ArenaOptions GetGlobalArenaOptions() {
  internal::MutexLock lock(&options_mu);
  return global_options;
}

ArenaStats GetArenaStats() {
  ArenaStats s;
  if (ArenaCache* cache = cache_made.load(std::memory_order_acquire)) {
    const internal::PointerCacheStats c = cache->Stats();
    s.arenas_acquired = c.hits + c.misses;
    s.arenas_created = cache->created();
    s.arenas_idle = c.in_depot + c.in_threads;
  }
  s.blocks_from_heap = heap_blocks.load(std::memory_order_relaxed);
  s.bytes_from_heap = heap_bytes.load(std::memory_order_relaxed);
  s.blocks_from_heap_fallback = fallback_total.load(std::memory_order_relaxed);
  return s;
}

size_t ReleaseIdleArenas(std::chrono::milliseconds idle_for) {
  size_t n = Cache().ReleaseIdle(idle_for);
  if (idle_for.count() == 0) n += Cache().DrainDepot();
  return n;
}

namespace internal {

google::protobuf::Arena* AcquireArena() {
  auto* arena = static_cast<google::protobuf::Arena*>(Cache().Pop());
  UnpoisonIdle(arena);
  return arena;
}

void ReleaseArena(google::protobuf::Arena* arena) {
  // Reset() frees the first block and allocates a new one, which under
  // memory pressure (some arena holds a heap fallback block) could throw
  // from a destructor: such arenas are destroyed instead, which allocates
  // nothing.
  if (__builtin_expect(fallback_live.load(std::memory_order_relaxed) != 0, 0)) {
#ifdef ARENARPC_ASAN
    SetFirstPage(arena, nullptr);
#endif
    delete arena;
    return;
  }
#ifdef ARENARPC_ASAN
  watched_page = FirstPage(arena);
  watched_page_freed = false;
  last_page = nullptr;
  arena->Reset();
  // The first page returned: the last one taken is the new first page.
  if (watched_page_freed) SetFirstPage(arena, last_page);
  watched_page = nullptr;
  PoisonFirstPage(arena, true);
#else
  arena->Reset();  // runs destructors, returns the blocks but one
#endif
  Cache().Push(arena);
}

}  // namespace internal

#ifdef ARENARPC_DISABLE_ARENAS

ScopedArena::ScopedArena() = default;

void ScopedArena::Release() {
  for (auto it = owned_.rbegin(); it != owned_.rend(); ++it)
    it->second(it->first);
  owned_.clear();
}

std::pmr::memory_resource* ScopedArena::memory_resource() {
  return std::pmr::new_delete_resource();
}

uint64_t ScopedArena::SpaceAllocated() const { return 0; }

#else

ScopedArena::ScopedArena() : arena_(internal::AcquireArena()) {}

void ScopedArena::Release() {
  // The resource is on the arena: released with it.
  resource_.store(nullptr, std::memory_order_relaxed);
  if (arena_ != nullptr) internal::ReleaseArena(arena_);
  arena_ = nullptr;
}

std::pmr::memory_resource* ScopedArena::memory_resource() {
  ArenaMemoryResource* r = resource_.load(std::memory_order_acquire);
  if (r != nullptr) return r;
  if (arena_ == nullptr) {
    // Moved from: no arena to allocate on (allocating aborts).
    static ArenaMemoryResource no_arena;
    return &no_arena;
  }
  // On the arena itself, so that it moves with the arena (a resource handed
  // out before a move stays valid in the new owner).
  auto* made =
      google::protobuf::Arena::Create<ArenaMemoryResource>(arena_, arena_);
  // Two threads may race here: the loser's resource stays unused on the
  // arena (a few bytes, released with it).
  if (resource_.compare_exchange_strong(r, made, std::memory_order_acq_rel)) {
    return made;
  }
  return r;
}

uint64_t ScopedArena::SpaceAllocated() const {
  return arena_ != nullptr ? arena_->SpaceAllocated() : 0;
}

#endif

ScopedArena::~ScopedArena() { Release(); }

ScopedArena::ScopedArena(ScopedArena&& other) noexcept {
  *this = std::move(other);
}

ScopedArena& ScopedArena::operator=(ScopedArena&& other) noexcept {
  if (this != &other) {
    Release();
    arena_ = std::exchange(other.arena_, nullptr);
    resource_.store(
        other.resource_.exchange(nullptr, std::memory_order_relaxed),
        std::memory_order_relaxed);
#ifdef ARENARPC_DISABLE_ARENAS
    owned_ = std::move(other.owned_);
    other.owned_.clear();
#endif
  }
  return *this;
}

}  // namespace arenarpc
