// Idle trimming and the pooled-memory cap of the gRPC adapters
// (ServerOptions::idle_trim, ServerOptions::max_pooled_bytes).
#include <stdlib.h>  // defines __GLIBC__ for the test below

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <atomic>
#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "arenarpc/arena.h"
#include "arenarpc/grpc/internal/counters.h"
#include "arenarpc/grpc/server_options.h"
#include "arenarpc/grpc/stats.h"
#include "arenarpc/grpc/stream.h"
#include "arenarpc/grpc/streaming.h"
#include "arenarpc/internal/mutex.h"
#include "arenarpc/page_pool.h"
#include "src/internal/background.h"

namespace arenarpc {
namespace internal {
namespace {

// 0: no cap. Read on every call in arena and reuse modes.
std::atomic<uint64_t> pooled_cap{0};
std::atomic<uint64_t> over_cap_calls{0};
std::atomic<uint64_t> idle_trims{0};
std::atomic<uint64_t> cap_trims{0};

// Runs on the background thread (src/internal/background.h): a tick every
// 100 ms, and a cap trim posted when a call finds the process over the cap.
class Trimmer {
 public:
  using Clock = std::chrono::steady_clock;

  void AddPool(void (*trim)(void*, std::chrono::milliseconds), void* pool) {
    MutexLock lock(&mu_);
    pools_.emplace_back(trim, pool);
  }
  void Start(int idle_ms) {
    MutexLock lock(&mu_);
    if (idle_ms_ == 0 || idle_ms < idle_ms_) idle_ms_ = idle_ms;
    StartTicks();
  }
  // Over the cap: trim the depots soon, at most once a tick, also when idle
  // trimming is off.
  void Wake() {
    if (wake_.exchange(true, std::memory_order_relaxed)) return;
    {
      MutexLock lock(&mu_);
      StartTicks();
    }
    if (!PostBackground([this] { CapTrim(); })) {
      wake_.store(false, std::memory_order_relaxed);
    }
  }
  // One tick at `now`: lets the next cap trim happen, and trims once calls
  // and background work stopped for idle_ms (again after any later
  // activity). Returns true if a cap trim happened since the last tick.
  bool Tick(Clock::time_point now) {
    const bool cap_trimmed = cap_trimmed_.exchange(false);
    wake_.store(false, std::memory_order_relaxed);
    int idle_ms;
    {
      MutexLock lock(&mu_);
      idle_ms = idle_ms_;
    }
    if (idle_ms == 0) return cap_trimmed;
    const uint64_t now_active = Activity();
    if (!ticked_) {
      ticked_ = true;
      last_change_ = now;
    }
    // From 0, not from Activity(): at nice 19 this thread may first run
    // only after the calls it should trim after.
    if (now_active != last_) {
      last_ = now_active;
      last_change_ = now;
      trimmed_ = false;
      return cap_trimmed;
    }
    if (trimmed_ || now - last_change_ < std::chrono::milliseconds(idle_ms)) {
      return cap_trimmed;
    }
    TrimPools(std::chrono::milliseconds(0));  // the server is idle
#if defined(__GLIBC__)
    malloc_trim(0);  // glibc keeps freed heap memory otherwise
#endif
    idle_trims.fetch_add(1, std::memory_order_relaxed);
    trimmed_ = true;
    return cap_trimmed;
  }
  // Tests: ticks only at the times a test gives (IdleTrimTickForTesting);
  // the background tick, at the clock's, would move the idle period.
  void UseTestClock() { test_clock_.store(true, std::memory_order_relaxed); }
  // Over the cap while serving: only caches idle for a second.
  void CapTrim() {
    TrimPools(std::chrono::seconds(1));
    cap_trims.fetch_add(1, std::memory_order_relaxed);
    cap_trimmed_.store(true);
  }

 private:
  // What changes while the server works: calls, streamed messages (a
  // server that only streams is not idle while they move), and the
  // background thread's tasks (shadow's samples free what they measured
  // after the calls ended; trimming before that would leave it pooled).
  static uint64_t Activity() {
    const GrpcStats s = GetGrpcStats();
    uint64_t n = BackgroundProgress();
    for (const GrpcModeStats& m : s.modes) n += m.calls + m.in_flight;
    for (uint64_t m : GetStreamTotals().messages) n += m;
    n += GetStreamArenaTotals().messages;
    return n;
  }
  void StartTicks() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (ticking_) return;
    ticking_ = true;
    AddBackgroundTick([this] {
      if (!test_clock_.load(std::memory_order_relaxed)) Tick(Clock::now());
    });
  }
  // idle_for: how long a thread's caches must have gone unused to be freed.
  void TrimPools(std::chrono::milliseconds idle_for) {
    std::vector<std::pair<void (*)(void*, std::chrono::milliseconds), void*>>
        pools;
    {
      MutexLock lock(&mu_);
      pools = pools_;
    }
    // The pools' depots and the instances cached by threads unused for
    // `idle_for`: those of a burst's threads would count against the cap
    // forever otherwise.
    for (auto& [trim, pool] : pools) trim(pool, idle_for);
    // Pooled arenas and page caches of threads unused for `idle_for` (the
    // gRPC threads, once the server is idle): an idle thread pool would pin
    // them otherwise.
    ReleaseIdleArenasAndPages(idle_for);
  }

  Mutex mu_;
  std::atomic<bool> wake_{false};
  std::atomic<bool> cap_trimmed_{false};
  std::atomic<bool> test_clock_{false};
  bool ticking_ ABSL_GUARDED_BY(mu_) = false;
  int idle_ms_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::pair<void (*)(void*, std::chrono::milliseconds), void*>>
      pools_ ABSL_GUARDED_BY(mu_);
  // Tick()'s state: the background thread's alone.
  bool ticked_ = false;
  uint64_t last_ = 0;
  Clock::time_point last_change_;
  bool trimmed_ = false;
};

Trimmer& GetTrimmer() {
  static Trimmer* const trimmer = new Trimmer();  // never destroyed
  return *trimmer;
}

}  // namespace

void RegisterMessagePoolTrim(void (*trim)(void*, std::chrono::milliseconds),
                             void* pool) {
  GetTrimmer().AddPool(trim, pool);
}

bool IdleTrimTickForTesting(std::chrono::steady_clock::time_point now) {
  GetTrimmer().UseTestClock();
  RunBackgroundOnce();  // a posted cap trim, if any
  return GetTrimmer().Tick(now);
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

void ReleaseIdleArenasAndPages(std::chrono::milliseconds idle_for) {
  ReleaseIdleArenas(idle_for);
  PagePool& pages = PagePool::Default();
  pages.FlushThreadCache();
  pages.ReleaseIdleCaches(idle_for);
  pages.Trim();
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
