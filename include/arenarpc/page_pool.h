// Fixed-size pages with per-thread caches and a bounded process-wide depot.
//
//   arenarpc::PagePool& pool = arenarpc::PagePool::Default();
//   void* page = pool.Allocate();          // pool.page_size() bytes
//   ...
//   pool.Deallocate(page);                 // any thread may return it
//
//   arenarpc::PagePoolStats s = pool.Stats();   // cheap: one lock, no walk
//
// Per-thread caches over a bounded depot; pages are mmap'd in batches and
// never touched by the pool. Why: docs/DESIGN.md ("Pages").
//
// Thread safety: every member function may run concurrently on any thread;
// a page may be returned by another thread than the one that took it.
// Lifetime: an exiting thread's cached pages go to the depot. The
// destructor unmaps the cached pages; pages still out are leaked (their
// owner may still use them). `Default()` is never destroyed.
//
// Misuse (a page returned twice or not from this pool, a pool destroyed
// with pages out, a page touched after its return) is undefined in release
// builds; debug and ASan builds catch it (docs/DESIGN.md, "Misuse").
#ifndef ARENARPC_PAGE_POOL_H_
#define ARENARPC_PAGE_POOL_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"

namespace arenarpc {

struct PagePoolOptions {
  size_t page_size = size_t{64} << 10;  // a power of two >= the OS page
  size_t depot_capacity_bytes = size_t{64} << 20;  // beyond: unmapped
  size_t thread_cache_pages = 32;  // a full cache sends half to the depot
  // Depot pages and thread caches unused this long are unmapped (0: never).
  uint32_t idle_decay_ms = 1000;
};

// A snapshot; under concurrent use fields may be off by a batch.
struct PagePoolStats {
  size_t page_size = 0;
  uint64_t pages_in_use = 0;        // handed out and not yet returned
  uint64_t pages_cached = 0;        // in thread caches and the depot
  uint64_t pages_in_depot = 0;      // the part of pages_cached in the depot
  uint64_t os_pages_allocated = 0;  // mapped from the OS since start
  uint64_t os_pages_released = 0;   // unmapped since start
  uint64_t cache_hits = 0;          // Allocate() served by a thread cache
  uint64_t cache_misses = 0;        // Allocate() that went to depot or OS
  // Bytes mapped now: in use plus cached.
  uint64_t bytes_held() const {
    return (os_pages_allocated - os_pages_released) * page_size;
  }
};

class PagePool final {
 public:
  // Invalid options (Validate()) abort.
  explicit PagePool(const PagePoolOptions& options = {});
  ~PagePool();
  PagePool(const PagePool&) = delete;
  PagePool& operator=(const PagePool&) = delete;

  static absl::Status Validate(const PagePoolOptions& options);

  // The process-wide pool (arenarpc's arenas use it).
  static PagePool& Default();
  // Sets the options of Default(): FailedPrecondition once it was used,
  // InvalidArgument for bad options (nothing changes on failure).
  static absl::Status ConfigureDefault(const PagePoolOptions& options);

  // page_size() bytes, 4 KiB-aligned, contents unspecified; nullptr if the
  // OS refuses memory.
  void* Allocate();
  void Deallocate(void* page);  // a page of this pool's Allocate()

  size_t page_size() const { return options_.page_size; }
  const PagePoolOptions& options() const { return options_; }
  PagePoolStats Stats() const;

  // Moves the calling thread's cached pages to the depot.
  void FlushThreadCache();
  // Unmaps every page in the depot.
  void Trim();
  // Stats().bytes_held() without the lock.
  uint64_t BytesHeld() const {
    return (os_allocated_.load(std::memory_order_relaxed) -
            os_released_.load(std::memory_order_relaxed)) *
           options_.page_size;
  }

  // Unmaps the pages of every thread cache unused for `idle_for` (zero:
  // not in use now; the fast path keeps no clock, so idleness is seen
  // across calls) and returns the bytes. Never waits for another thread.
  size_t ReleaseIdleCaches(std::chrono::milliseconds idle_for);

 private:
  class Source;  // maps and unmaps pages for the cache
  void DebugTrack(void* page, bool allocating);

  const PagePoolOptions options_;
  std::unique_ptr<Source> source_;
  std::atomic<uint64_t> os_allocated_{0};
  std::atomic<uint64_t> os_released_{0};

  struct DebugState;
  std::unique_ptr<DebugState> debug_;  // only with ARENARPC_DEBUG_CHECKS
};

namespace internal {
// PagePool::Default().Stats() if it was used, else zeros with the page size
// it will have (reading stats must not create it).
PagePoolStats DefaultPagePoolStats();
}  // namespace internal

}  // namespace arenarpc

#endif  // ARENARPC_PAGE_POOL_H_
