// Memory held by idle thread caches after a burst, with and without a timer
// calling PagePool::ReleaseIdleCaches (docs/OPERATE.md, "Threads and plugins").
//
//   idle_caches_bench [--threads=16] [--idle_ms=500] [--period_ms=250]
//
// --threads workers (a server's thread pool) each take and return
// thread_cache_pages pages at once (a burst), then block, as idle workers
// do. The main thread prints the pool's bytes held and cached every 100 ms
// for 2 s: first with no trimming (the caches pin the pages until their
// threads exit), then, on a fresh pool, with ReleaseIdleCaches(idle_ms)
// called every period_ms.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "arenarpc/page_pool.h"

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

void Run(const char* label, int threads, int idle_ms, int period_ms) {
  arenarpc::PagePool pool;  // default options: 64 KiB pages, 32 per thread
  const size_t burst = pool.options().thread_cache_pages;
  std::mutex mu;
  std::condition_variable cv;
  int filled = 0;
  bool stop = false;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      std::vector<void*> pages;
      for (size_t i = 0; i < burst; ++i) {
        pages.push_back(pool.Allocate());
        std::memset(pages.back(), 1, 64);
      }
      for (void* p : pages) pool.Deallocate(p);
      std::unique_lock<std::mutex> lock(mu);
      ++filled;
      cv.notify_all();
      cv.wait(lock, [&] { return stop; });  // idle worker
    });
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return filled == threads; });
  }
  const Clock::time_point start = Clock::now();
  Clock::time_point next_trim = start + milliseconds(period_ms);
  size_t released = 0;
  for (int ms = 0; ms <= 2000; ms += 100) {
    std::this_thread::sleep_until(start + milliseconds(ms));
    if (idle_ms >= 0 && Clock::now() >= next_trim) {
      released += pool.ReleaseIdleCaches(milliseconds(idle_ms));
      next_trim += milliseconds(period_ms);
    }
    const arenarpc::PagePoolStats s = pool.Stats();
    std::printf(
        "%s t_ms=%d bytes_held=%llu pages_cached=%llu released_total=%zu\n",
        label, ms, static_cast<unsigned long long>(s.bytes_held()),
        static_cast<unsigned long long>(s.pages_cached), released);
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    stop = true;
  }
  cv.notify_all();
  for (std::thread& w : workers) w.join();
  pool.Trim();
}

int Flag(int argc, char** argv, const char* name, int fallback) {
  const std::string prefix = std::string("--") + name + "=";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], prefix.c_str(), prefix.size()) == 0) {
      return std::atoi(argv[i] + prefix.size());
    }
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = Flag(argc, argv, "threads", 16);
  const int idle_ms = Flag(argc, argv, "idle_ms", 500);
  const int period_ms = Flag(argc, argv, "period_ms", 250);
  std::printf(
      "# %d idle workers, each cached a burst of thread_cache_pages pages\n",
      threads);
  Run("no_trim", threads, -1, period_ms);
  Run("release_idle", threads, idle_ms, period_ms);
  return 0;
}
