// Idle trimming and the pooled-memory cap of the gRPC adapters
// (ServerOptions::idle_trim, ServerOptions::max_pooled_bytes).
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "arenarpc/arena.h"
#include "arenarpc/grpc/internal/counters.h"
#include "arenarpc/grpc/server.h"
#include "arenarpc/grpc/stats.h"
#include "arenarpc/internal/mutex.h"
#include "arenarpc/page_pool.h"

namespace arenarpc {
namespace internal {
namespace {

// 0: no cap. Read on every call in arena and reuse modes.
std::atomic<uint64_t> pooled_cap{0};
std::atomic<uint64_t> over_cap_calls{0};
std::atomic<uint64_t> idle_trims{0};
std::atomic<uint64_t> cap_trims{0};

class Trimmer {
 public:
  void AddPool(void (*trim)(void*), void* pool) {
    MutexLock lock(&mu_);
    pools_.emplace_back(trim, pool);
  }

  void Start(int idle_ms) {
    MutexLock lock(&mu_);
    if (idle_ms_ == 0 || idle_ms < idle_ms_) idle_ms_ = idle_ms;
    if (!started_) {
      started_ = true;
      std::thread([this] { Run(); }).detach();
    }
    cv_.Signal();
  }

  // Over the cap: trim the depots soon (at most every 100 ms), also when
  // idle trimming is off.
  void Wake() {
    if (wake_.exchange(true, std::memory_order_relaxed)) return;
    MutexLock lock(&mu_);
    if (!started_) {
      started_ = true;
      std::thread([this] { Run(); }).detach();
    }
    cv_.Signal();
  }

 private:
  using Clock = std::chrono::steady_clock;

  static uint64_t Allocated() {
    const GrpcStats s = GetGrpcStats();
    uint64_t n = 0;
    for (const GrpcModeStats& m : s.modes) n += m.calls + m.in_flight;
    return n;
  }

  // idle_for: how long a thread's caches must have gone unused to be freed.
  void TrimPools(std::chrono::milliseconds idle_for) {
    std::vector<std::pair<void (*)(void*), void*>> pools;
    {
      MutexLock lock(&mu_);
      pools = pools_;
    }
    for (auto& [trim, pool] : pools) trim(pool);
    // Pooled arenas and page caches of threads unused for `idle_for` (the
    // gRPC threads, once the server is idle): an idle thread pool would pin
    // them otherwise. Pages they free land in this thread's cache first.
    ReleaseIdleArenas(idle_for);
    PagePool::Default().FlushThreadCache();
    PagePool::Default().ReleaseIdleCaches(idle_for);
    PagePool::Default().Trim();
  }

  void Run() {
    // Below the server's threads: trimming must not delay calls.
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19);
    // From 0, not from Allocated(): at nice 19 this thread may first run
    // only after the calls it should trim after.
    uint64_t last = 0;
    Clock::time_point last_change = Clock::now();
    bool trimmed = false;
    for (;;) {
      int idle_ms;
      {
        MutexLock lock(&mu_);
        const Clock::time_point deadline =
            Clock::now() + std::chrono::milliseconds(100);
        while (!wake_.load(std::memory_order_relaxed) &&
               cv_.WaitUntil(&mu_, deadline)) {
        }
        idle_ms = idle_ms_;
      }
      if (wake_.load(std::memory_order_relaxed)) {
        // Over the cap while serving: only caches idle for a second.
        TrimPools(std::chrono::seconds(1));
        cap_trims.fetch_add(1, std::memory_order_relaxed);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        wake_.store(false, std::memory_order_relaxed);
      }
      if (idle_ms == 0) continue;
      const uint64_t now_allocated = Allocated();
      const Clock::time_point now = Clock::now();
      if (now_allocated != last) {
        last = now_allocated;
        last_change = now;
        trimmed = false;
        continue;
      }
      if (trimmed || now - last_change < std::chrono::milliseconds(idle_ms)) {
        continue;
      }
      TrimPools(std::chrono::milliseconds(0));  // the server is idle
#if defined(__GLIBC__)
      malloc_trim(0);  // glibc keeps freed heap memory otherwise
#endif
      idle_trims.fetch_add(1, std::memory_order_relaxed);
      trimmed = true;
    }
  }

  Mutex mu_;
  CondVar cv_;
  std::atomic<bool> wake_{false};
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  int idle_ms_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::pair<void (*)(void*), void*>> pools_ ABSL_GUARDED_BY(mu_);
};

Trimmer& GetTrimmer() {
  static Trimmer* const trimmer = new Trimmer();  // never destroyed
  return *trimmer;
}

}  // namespace

void RegisterMessagePoolTrim(void (*trim)(void*), void* pool) {
  GetTrimmer().AddPool(trim, pool);
}

void ApplyServerLimits(const ServerOptions& options) {
  if (options.max_pooled_bytes > 0) {
    uint64_t cur = pooled_cap.load();
    while ((cur == 0 || options.max_pooled_bytes < cur) &&
           !pooled_cap.compare_exchange_weak(cur, options.max_pooled_bytes)) {
    }
  }
  if (options.idle_trim.idle_ms > 0)
    GetTrimmer().Start(options.idle_trim.idle_ms);
}

bool OverPooledCap() {
  const uint64_t cap = pooled_cap.load(std::memory_order_relaxed);
  if (cap == 0 || PagePool::Default().BytesHeld() <= cap) return false;
  over_cap_calls.fetch_add(1, std::memory_order_relaxed);
  GetTrimmer().Wake();
  return true;
}

uint64_t OverCapHeapCalls() {
  return over_cap_calls.load(std::memory_order_relaxed);
}
uint64_t IdleTrims() { return idle_trims.load(std::memory_order_relaxed); }
uint64_t CapTrims() { return cap_trims.load(std::memory_order_relaxed); }

}  // namespace internal
}  // namespace arenarpc
