#include "arenarpc/page_pool.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <unordered_map>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "arenarpc/internal/check.h"
#include "arenarpc/internal/mutex.h"
#include "src/internal/memory_source.h"
#include "src/internal/pointer_cache.h"

namespace arenarpc {

// Debug-build bookkeeping: which pages this pool mapped and which are out.
struct PagePool::DebugState {
  internal::Mutex mu;
  std::unordered_map<void*, bool> in_use ABSL_GUARDED_BY(mu);
};

// Pages are mapped in batches and unmapped one by one (any sub-range of a
// mapping may be); a cached page is poisoned under ASan.
class PagePool::Source final : public internal::PointerCache {
 public:
  explicit Source(PagePool* pool)
      : PointerCache(
            pool->options_.thread_cache_pages,
            pool->options_.depot_capacity_bytes / pool->options_.page_size,
            std::chrono::milliseconds(pool->options_.idle_decay_ms)),
        pool_(pool) {}
  ~Source() override { Shutdown(); }

 protected:
  size_t Make(void** out, size_t n) override {
    const size_t ps = pool_->options_.page_size;
    void* mem = internal::MapMemory(n * ps);
    if (mem == nullptr) return 0;
    ARENARPC_POISON(mem, n * ps);
    for (size_t i = 0; i < n; ++i) {
      out[i] = static_cast<char*>(mem) + i * ps;
      ARENARPC_LSAN_ROOT(out[i], ps);  // unmapped one by one: one region each
    }
    if (ARENARPC_DEBUG_CHECKS) {
      internal::MutexLock lock(&pool_->debug_->mu);
      for (size_t i = 0; i < n; ++i) pool_->debug_->in_use[out[i]] = false;
    }
    pool_->os_allocated_.fetch_add(n, std::memory_order_relaxed);
    return n;
  }

  void Destroy(void* const* pages, size_t n) override {
    const size_t ps = pool_->options_.page_size;
    if (ARENARPC_DEBUG_CHECKS) {  // before munmap: the OS may reuse the range
      internal::MutexLock lock(&pool_->debug_->mu);
      for (size_t i = 0; i < n; ++i) pool_->debug_->in_use.erase(pages[i]);
    }
    for (size_t i = 0; i < n; ++i) {
      // ASan wants the range clean before the OS may map it again elsewhere.
      ARENARPC_UNPOISON(pages[i], ps);
      ARENARPC_LSAN_UNROOT(pages[i], ps);
      internal::UnmapMemory(pages[i], ps);
    }
    pool_->os_released_.fetch_add(n, std::memory_order_relaxed);
  }

 private:
  PagePool* const pool_;
};

namespace {
internal::Mutex default_mu;
PagePoolOptions default_options ABSL_GUARDED_BY(default_mu);
// Default() once made (under default_mu): stats must not create it.
std::atomic<PagePool*> default_made{nullptr};
}  // namespace

absl::Status PagePool::Validate(const PagePoolOptions& o) {
  const size_t os_page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (o.page_size < os_page || !std::has_single_bit(o.page_size) ||
      o.page_size > (size_t{1} << 30)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "page_size must be a power of two between the OS page size (", os_page,
        ") and 1 GiB, got ", o.page_size));
  }
  if (o.thread_cache_pages < 1 || o.thread_cache_pages > 65536) {
    return absl::InvalidArgumentError(
        absl::StrCat("thread_cache_pages must be in [1, 65536], got ",
                     o.thread_cache_pages));
  }
  return absl::OkStatus();
}

PagePool::PagePool(const PagePoolOptions& options) : options_(options) {
  ARENARPC_CHECK(Validate(options).ok(),
                 "PagePool: invalid options (see PagePool::Validate)");
  if (ARENARPC_DEBUG_CHECKS) debug_ = std::make_unique<DebugState>();
  source_ = std::make_unique<Source>(this);
}

PagePool::~PagePool() {
  source_.reset();
  ARENARPC_DCHECK(os_allocated_.load() == os_released_.load(),
                  "PagePool destroyed while pages are still in use");
}

PagePool& PagePool::Default() {
  static PagePool* const pool = [] {
    internal::MutexLock lock(&default_mu);
    auto* made = new PagePool(default_options);  // leaked: outlives threads
    default_made.store(made, std::memory_order_release);
    return made;
  }();
  return *pool;
}

PagePoolStats internal::DefaultPagePoolStats() {
  if (const PagePool* pool = default_made.load(std::memory_order_acquire)) {
    return pool->Stats();
  }
  PagePoolStats s;
  internal::MutexLock lock(&default_mu);
  s.page_size = default_options.page_size;
  return s;
}

absl::Status PagePool::ConfigureDefault(const PagePoolOptions& options) {
  absl::Status status = Validate(options);
  if (!status.ok()) return status;
  internal::MutexLock lock(&default_mu);
  if (default_made.load(std::memory_order_relaxed) != nullptr) {
    return absl::FailedPreconditionError(
        "the default page pool is already in use; set its options before "
        "the first arena or page is allocated");
  }
  default_options = options;
  return absl::OkStatus();
}

void* PagePool::Allocate() {
  void* page = source_->Pop();
  if (__builtin_expect(page == nullptr, 0)) return nullptr;
  ARENARPC_UNPOISON(page, options_.page_size);
  if (ARENARPC_DEBUG_CHECKS) DebugTrack(page, true);
  return page;
}

void PagePool::Deallocate(void* page) {
  ARENARPC_CHECK(page != nullptr, "PagePool::Deallocate(nullptr)");
  // A cached page is poisoned under ASan: caught in every build.
  ARENARPC_CHECK(!ARENARPC_IS_POISONED(page),
                 "PagePool::Deallocate: page returned twice");
  if (ARENARPC_DEBUG_CHECKS) DebugTrack(page, false);
  ARENARPC_POISON(page, options_.page_size);
  source_->Push(page);
}

void PagePool::DebugTrack(void* page, bool allocating) {
  internal::MutexLock lock(&debug_->mu);
  auto it = debug_->in_use.find(page);
  ARENARPC_CHECK(it != debug_->in_use.end(),
                 "PagePool::Deallocate: page is not from this pool");
  ARENARPC_CHECK(it->second != allocating,
                 allocating ? "PagePool::Allocate: page handed out twice"
                            : "PagePool::Deallocate: page returned twice");
  it->second = allocating;
}

void PagePool::FlushThreadCache() { source_->FlushThisThread(); }

void PagePool::Trim() { source_->DrainDepot(); }

size_t PagePool::ReleaseIdleCaches(std::chrono::milliseconds idle_for) {
  return source_->ReleaseIdle(idle_for) * options_.page_size;
}

PagePoolStats PagePool::Stats() const {
  const internal::PointerCacheStats c = source_->Stats();
  PagePoolStats s;
  s.page_size = options_.page_size;
  s.pages_in_depot = c.in_depot;
  s.pages_cached = c.in_depot + c.in_threads;
  s.cache_hits = c.hits;
  s.cache_misses = c.misses;
  s.os_pages_released = os_released_.load(std::memory_order_relaxed);
  s.os_pages_allocated = os_allocated_.load(std::memory_order_relaxed);
  const uint64_t held = s.os_pages_allocated - s.os_pages_released;
  s.pages_in_use = held > s.pages_cached ? held - s.pages_cached : 0;
  return s;
}

// The pools' memory from the OS (memory_source.h).
namespace internal {
namespace {

void* Map(size_t len) {
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

void Unmap(void* p, size_t len) { munmap(p, len); }

// Constant-initialised: pools may map memory from static initialisers.
constinit std::atomic<void* (*)(size_t)> map_fn{&Map};
constinit std::atomic<void (*)(void*, size_t)> unmap_fn{&Unmap};

}  // namespace

MemorySource DefaultMemorySource() { return {&Map, &Unmap}; }

MemorySource SetMemorySourceForTesting(MemorySource source) {
  return {map_fn.exchange(source.map), unmap_fn.exchange(source.unmap)};
}

void* MapMemory(size_t len) {
  return map_fn.load(std::memory_order_acquire)(len);
}

void UnmapMemory(void* p, size_t len) {
  unmap_fn.load(std::memory_order_acquire)(p, len);
}

}  // namespace internal

}  // namespace arenarpc
