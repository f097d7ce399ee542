// Fixed-size pages with per-thread caches and a bounded process-wide depot.
//
//   arenarpc::PagePool& pool = arenarpc::PagePool::Default();
//   void* page = pool.Allocate();          // pool.page_size() bytes
//   ...
//   pool.Deallocate(page);                 // any thread may return it
//
//   arenarpc::PagePoolStats s = pool.Stats();   // cheap: one lock, no walk
//
// Design. A page is taken from the calling thread's cache (a LIFO stack, so
// the page is probably still in this core's cache); an empty cache refills
// with a batch from the depot, and a full cache sends its colder half there.
// The depot holds at most `depot_capacity_bytes`; pages beyond that are
// unmapped (munmap), so an idle process gives memory back; pages a burst
// left that no thread took for `idle_decay_ms` are unmapped too. Pages come
// from mmap in batches and are never touched by the pool itself, so a page
// never used stays unbacked.
//
// Thread safety: every member function may be called concurrently from any
// thread. A page may be returned by a thread other than the one that took it.
// Idle threads: a thread's cache keeps up to `thread_cache_pages` pages
// while the thread uses it; decay unmaps a cache's pages once its thread
// has taken and returned none for a period, and ReleaseIdleCaches() does
// so at once for caches unused for `idle_for` (idle workers of a pool).
// A cache's `busy` flag (one uncontended atomic exchange per Allocate or
// Deallocate) is what lets another thread empty it safely.
//
// Lifetime: a thread that exits hands its cached pages to the depot. The
// destructor unmaps every cached page; pages still handed out at that time
// are leaked (asserted in debug builds) since their owner may still use them.
// `Default()` is never destroyed.
//
// Misuse, by build (debug: ARENARPC_DEBUG_CHECKS, on unless NDEBUG):
//  - a page returned twice: debug and ASan builds abort ("returned twice");
//    release builds: undefined behaviour (the page is cached twice and
//    later handed out twice);
//  - a page of another pool, or memory no pool mapped: debug builds abort
//    ("not from this pool"); release builds: undefined behaviour (the
//    memory joins this pool's cache);
//  - touching a page after returning it: undefined behaviour; under ASan
//    the cached page is poisoned, so it is reported (use-after-poison);
//  - destroying a pool with pages still out: debug builds abort ("while
//    pages are still in use"); release builds leak those pages (defined).
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
  // Bytes per page: a power of two, at least 4 KiB (the OS page).
  size_t page_size = size_t{64} << 10;
  // Pages the depot keeps for reuse; beyond this they go back to the OS.
  size_t depot_capacity_bytes = size_t{64} << 20;
  // Pages each thread caches; a full cache moves half of them to the depot.
  size_t thread_cache_pages = 32;
  // Decay: once this often, pages that waited in the depot through the
  // whole period, and the caches of threads that took or returned no page
  // in it, are unmapped, so what a burst mapped goes back within a few
  // periods while the process keeps working. 0: off (only the depot bound
  // and ReleaseIdleCaches() give pages back).
  uint32_t idle_decay_ms = 1000;
};

// A snapshot. Counters are read without stopping other threads, so under
// concurrent use the fields may be mutually off by a batch.
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
  // Options are checked by Validate(); invalid ones abort with a message.
  explicit PagePool(const PagePoolOptions& options = {});
  ~PagePool();
  PagePool(const PagePool&) = delete;
  PagePool& operator=(const PagePool&) = delete;

  static absl::Status Validate(const PagePoolOptions& options);

  // The process-wide pool (used by arenarpc's arenas). Its options are the
  // ones given to ConfigureDefault() before its first use.
  static PagePool& Default();
  // Sets the options of Default(). Fails with FailedPrecondition once
  // Default() has been used, and with InvalidArgument for bad options; on
  // failure nothing changes.
  static absl::Status ConfigureDefault(const PagePoolOptions& options);

  // Returns a page of page_size() bytes, aligned to 4 KiB, or nullptr if the
  // OS refuses memory. Its contents are unspecified.
  void* Allocate();
  // Returns a page obtained from this pool's Allocate().
  void Deallocate(void* page);

  size_t page_size() const { return options_.page_size; }
  const PagePoolOptions& options() const { return options_; }
  PagePoolStats Stats() const;

  // Moves the calling thread's cached pages to the depot (e.g. before a
  // thread goes idle for long).
  void FlushThreadCache();
  // Unmaps every page in the depot.
  void Trim();
  // Stats().bytes_held() without the lock: cheap enough for every call.
  uint64_t BytesHeld() const {
    return (os_allocated_.load(std::memory_order_relaxed) -
            os_released_.load(std::memory_order_relaxed)) *
           options_.page_size;
  }

  // Unmaps the pages cached by every thread whose cache no Allocate or
  // Deallocate of that thread touched for at least `idle_for`, and returns
  // the bytes unmapped. Idleness is observed across calls (the fast path
  // keeps no clock): a cache counts as idle from the first call that finds
  // it unchanged, so call this periodically (e.g. every idle_for / 2); a
  // cache last used at time t is released within t + idle_for + two call
  // periods (bench/arena/idle_caches_bench.cc). `idle_for` of zero
  // releases every thread cache not in use at this instant (memory
  // pressure). The threads keep working: an emptied cache refills from the
  // depot or the OS on its next Allocate. The depot is not touched (see
  // Trim()).
  // Thread safety: may be called from any thread, concurrently with
  // everything else; it never waits for another thread's Allocate or
  // Deallocate (a cache in use at that instant is skipped).
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
// it will have: stats readers must not create it (that would fix its
// options).
PagePoolStats DefaultPagePoolStats();
}  // namespace internal

}  // namespace arenarpc

#endif  // ARENARPC_PAGE_POOL_H_
