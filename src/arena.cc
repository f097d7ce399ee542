#include "arenarpc/arena.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <new>
#include <unordered_map>

#include "absl/base/thread_annotations.h"
#include "arenarpc/internal/check.h"
#include "arenarpc/internal/mutex.h"
#include "arenarpc/page_pool.h"
#include "src/internal/pointer_cache.h"

namespace arenarpc {
namespace {

internal::Mutex options_mu;
ArenaOptions global_options ABSL_GUARDED_BY(options_mu);

// Read by the block hooks, which are plain function pointers with no
// context; written once, before the first arena exists.
PagePool* block_pool = nullptr;
size_t block_size = 0;
std::atomic<uint64_t> heap_blocks{0};
std::atomic<uint64_t> heap_bytes{0};

#ifdef ARENARPC_ASAN
// Per thread, for the first pages (below): the page handed out last, and
// whether `watched_page` went back.
thread_local void* last_page = nullptr;
thread_local void* watched_page = nullptr;
thread_local bool watched_page_freed = false;
#endif

// Heap blocks for pages the pool lacked (protobuf's hooks cannot fail; only
// a failing heap throws). Pages are 4 KiB-aligned, these never are.
constexpr size_t kFallbackOffset = 64;
constexpr std::align_val_t kFallbackAlign{4096};
std::atomic<uint64_t> fallback_live{0};
std::atomic<uint64_t> fallback_total{0};

[[gnu::noinline, gnu::cold]] void* FallbackBlock(size_t size) {
  auto* base = static_cast<char*>(
      ::operator new(size + kFallbackOffset, kFallbackAlign));
  fallback_live.fetch_add(1, std::memory_order_relaxed);
  fallback_total.fetch_add(1, std::memory_order_relaxed);
  return base + kFallbackOffset;
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

// protobuf passes back the size it got from BlockAlloc.
void BlockDealloc(void* block, size_t size) {
  if (__builtin_expect(size != block_size, 0)) {
    ::operator delete(block);
  } else if (__builtin_expect(reinterpret_cast<uintptr_t>(block) % 4096 != 0,
                              0)) {
    fallback_live.fetch_sub(1, std::memory_order_relaxed);
    ::operator delete(static_cast<char*>(block) - kFallbackOffset,
                      kFallbackAlign);
  } else {
#ifdef ARENARPC_ASAN
    if (block == watched_page) watched_page_freed = true;
#endif
    block_pool->Deallocate(block);
  }
}

using google::protobuf::Arena;

#ifdef ARENARPC_ASAN
// An idle arena keeps its first page, which the page pool's poison never
// covers: poisoned here while the arena is idle. ASan builds only, so a
// lock is fine.
internal::Mutex first_pages_mu;
auto* const first_pages ABSL_PT_GUARDED_BY(first_pages_mu) =
    new std::unordered_map<const Arena*, void*>;

void* FirstPage(const Arena* arena) {
  internal::MutexLock lock(&first_pages_mu);
  auto it = first_pages->find(arena);
  return it == first_pages->end() ? nullptr : it->second;
}

// nullptr: not tracked (nothing poisoned). Never throws: out of memory, the
// arena is just not tracked.
void SetFirstPage(const Arena* arena, void* page) noexcept {
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

void PoisonFirstPage(const Arena* arena, bool poison) {
  void* page = FirstPage(arena);
  if (page != nullptr && poison) ARENARPC_POISON(page, block_size);
  if (page != nullptr && !poison) ARENARPC_UNPOISON(page, block_size);
}

Arena* NewArena(const google::protobuf::ArenaOptions& options) {
  last_page = nullptr;
  auto* arena = new Arena(options);
  SetFirstPage(arena, last_page);  // protobuf takes it in the constructor
  return arena;
}

// Unused with ARENARPC_DISABLE_ARENAS, as below.
[[maybe_unused]] void ResetArena(Arena* arena) {
  watched_page = FirstPage(arena);
  watched_page_freed = false;
  last_page = nullptr;
  arena->Reset();
  // The first page went back: the page taken since is the new first page.
  if (watched_page_freed) SetFirstPage(arena, last_page);
  watched_page = nullptr;
  PoisonFirstPage(arena, true);
}
#else
void SetFirstPage(const Arena*, void*) {}
void PoisonFirstPage(const Arena*, bool) {}
Arena* NewArena(const google::protobuf::ArenaOptions& o) {
  return new Arena(o);
}
[[maybe_unused]] void ResetArena(Arena* arena) { arena->Reset(); }
#endif

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
  size_t Make(void** out, size_t) override {
    // One at a time: building arenas ahead would only hold pages idle.
    out[0] = NewArena(options_);
    created_.fetch_add(1, std::memory_order_relaxed);
    return 1;
  }
  void Destroy(void* const* arenas, size_t n) override {
    for (size_t i = 0; i < n; ++i) {
      auto* arena = static_cast<Arena*>(arenas[i]);
      PoisonFirstPage(arena, false);
      SetFirstPage(arena, nullptr);
      delete arena;
    }
  }

 private:
  google::protobuf::ArenaOptions options_;
  std::atomic<uint64_t> created_{0};
};

// Cache() once made (under options_mu): stats must not create it.
std::atomic<ArenaCache*> cache_made{nullptr};

ArenaCache& Cache() {
  static ArenaCache* const cache = [] {
    internal::MutexLock lock(&options_mu);
    // The block size is the page pool's, whoever configured it: blocks of
    // another size would all miss the pool.
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
  if (cache_made.load(std::memory_order_relaxed) != nullptr) {
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

#else

ScopedArena::ScopedArena() : arena_(static_cast<Arena*>(Cache().Pop())) {
  PoisonFirstPage(arena_, false);
}

void ScopedArena::Release() {
  resource_.store(nullptr, std::memory_order_relaxed);  // on the arena
  Arena* arena = std::exchange(arena_, nullptr);
  if (arena == nullptr) return;
  // Reset() frees the first block and allocates a new one, which while a
  // heap fallback block is alive could throw from a destructor: such
  // arenas are destroyed instead, which allocates nothing.
  if (__builtin_expect(fallback_live.load(std::memory_order_relaxed) != 0, 0)) {
    SetFirstPage(arena, nullptr);
    delete arena;
    return;
  }
  ResetArena(arena);  // runs destructors, returns the blocks but one
  Cache().Push(arena);
}

std::pmr::memory_resource* ScopedArena::memory_resource() {
  ArenaMemoryResource* r = resource_.load(std::memory_order_acquire);
  if (r != nullptr) return r;
  if (arena_ == nullptr) {  // moved from: allocating aborts
    static ArenaMemoryResource no_arena;
    return &no_arena;
  }
  // On the arena, so that it moves with it; a racing thread's stays unused.
  auto* made = Arena::Create<ArenaMemoryResource>(arena_, arena_);
  return resource_.compare_exchange_strong(r, made, std::memory_order_acq_rel)
             ? made
             : r;
}

#endif

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

// The memory resources (memory_resource.h).
struct MonotonicPageResource::Page {
  Page* next;
};

struct MonotonicPageResource::Large {
  Large* next;
  void* block;  // what operator new returned
  size_t size;
  size_t alignment;
};

namespace {
char* AlignUp(char* p, size_t alignment) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  return reinterpret_cast<char*>((v + alignment - 1) & ~(alignment - 1));
}
}  // namespace

MonotonicPageResource::MonotonicPageResource()
    : MonotonicPageResource(PagePool::Default()) {}

void* MonotonicPageResource::do_allocate(size_t bytes, size_t alignment) {
  char* p = AlignUp(cursor_, alignment);
  if (cursor_ != nullptr && p + bytes <= limit_ && p >= cursor_) {
    cursor_ = p + bytes;
    return p;
  }
  const size_t page_size = pool_.page_size();
  if (bytes + alignment + sizeof(Page) > page_size / 2) {
    // Large: own heap block, header stored in front of the aligned payload.
    const size_t align = std::max(alignment, alignof(Large));
    const size_t header = (sizeof(Large) + align - 1) & ~(align - 1);
    const size_t size = header + bytes;
    void* block = ::operator new(size, std::align_val_t(align));
    char* payload = static_cast<char*>(block) + header;
    auto* large = reinterpret_cast<Large*>(payload - sizeof(Large));
    *large = {large_, block, size, align};
    large_ = large;
    return payload;
  }
  void* mem = pool_.Allocate();
  if (mem == nullptr) throw std::bad_alloc();  // pmr's contract
  pages_ = new (mem) Page{pages_};
  ++pages_held_;
  cursor_ = static_cast<char*>(mem) + sizeof(Page);
  limit_ = static_cast<char*>(mem) + page_size;
  p = AlignUp(cursor_, alignment);
  cursor_ = p + bytes;
  return p;
}

void MonotonicPageResource::release() {
  while (large_ != nullptr) {
    Large* l = std::exchange(large_, large_->next);
    ::operator delete(l->block, l->size, std::align_val_t(l->alignment));
  }
  while (pages_ != nullptr)
    pool_.Deallocate(std::exchange(pages_, pages_->next));
  pages_held_ = 0;
  cursor_ = limit_ = nullptr;
}

void* ArenaMemoryResource::do_allocate(size_t bytes, size_t alignment) {
  ARENARPC_CHECK(arena_ != nullptr,
                 "ArenaMemoryResource used without an arena");
  // protobuf wants sizes in multiples of 8 when alignment > 8.
  return arena_->AllocateAligned((bytes + 7) & ~size_t{7}, alignment);
}

}  // namespace arenarpc
