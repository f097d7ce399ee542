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
#include "arenarpc/grpc/internal/method_meter.h"
#include "arenarpc/grpc/server_options.h"
#include "arenarpc/grpc/stats.h"
#include "arenarpc/grpc/stream.h"
#include "arenarpc/grpc/streaming.h"
#include "arenarpc/internal/mutex.h"
#include "arenarpc/page_pool.h"
#include "src/internal/background_thread.h"

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
  using Clock = std::chrono::steady_clock;

  void AddPool(void (*trim)(void*, std::chrono::milliseconds), void* pool) {
    MutexLock lock(&mu_);
    pools_.emplace_back(trim, pool);
  }

  void Start(int idle_ms) {
    MutexLock lock(&mu_);
    if (idle_ms_ == 0 || idle_ms < idle_ms_) idle_ms_ = idle_ms;
    StartThread();
    cv_.Signal();
  }

  // Over the cap: trim the depots soon (at most every 100 ms), also when
  // idle trimming is off.
  void Wake() {
    if (wake_.exchange(true, std::memory_order_relaxed)) return;
    MutexLock lock(&mu_);
    StartThread();
    cv_.Signal();
  }

  // One pass of the trimming thread at `now`: the cap's trim if woken, the
  // idle trim once calls and measuring stopped for idle_ms (again after
  // any later activity). Returns true after a cap
  // trim. Only the trimming thread runs it (or a test that started none).
  bool Tick(Clock::time_point now) {
    int idle_ms;
    {
      MutexLock lock(&mu_);
      idle_ms = idle_ms_;
    }
    bool cap_trimmed = false;
    if (wake_.load(std::memory_order_relaxed)) {
      // Over the cap while serving: only caches idle for a second.
      TrimPools(std::chrono::seconds(1));
      cap_trims.fetch_add(1, std::memory_order_relaxed);
      cap_trimmed = true;
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

  // After a cap trim (and the pause that rate-limits them): Wake() may ask
  // for the next.
  void CapTrimDone() { wake_.store(false, std::memory_order_relaxed); }

 private:
  // What changes while the server works: calls, streamed messages (a
  // server that only streams is not idle while they move), and the
  // measuring thread's samples (it frees what it measured after the calls
  // ended; trimming before it is done would leave that memory pooled and in
  // the heap).
  static uint64_t Activity() {
    const GrpcStats s = GetGrpcStats();
    uint64_t n = MeasuringProgress();
    for (const GrpcModeStats& m : s.modes) n += m.calls + m.in_flight;
    for (uint64_t m : GetStreamTotals().messages) n += m;
    n += GetStreamArenaTotals().messages;
    return n;
  }

  // Lazily, from the first call that needs it (a gRPC call thread): if the
  // thread cannot start, there is no background trimming (counted and
  // logged once by StartBackgroundThread), and the call goes on.
  void StartThread() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (started_) return;
    started_ = true;
    StartBackgroundThread("arenarpc idle trimming", [this] { Run(); });
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

  void Run() {
    // Below the server's threads: trimming must not delay calls.
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19);
    for (;;) {
      {
        MutexLock lock(&mu_);
        const Clock::time_point deadline =
            Clock::now() + std::chrono::milliseconds(100);
        while (!wake_.load(std::memory_order_relaxed) &&
               cv_.WaitUntil(&mu_, deadline)) {
        }
      }
      if (Tick(Clock::now())) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        CapTrimDone();
      }
    }
  }

  Mutex mu_;
  CondVar cv_;
  std::atomic<bool> wake_{false};
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  int idle_ms_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::pair<void (*)(void*, std::chrono::milliseconds), void*>>
      pools_ ABSL_GUARDED_BY(mu_);
  // Tick()'s state: the trimming thread's alone.
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
  const bool cap_trimmed = GetTrimmer().Tick(now);
  if (cap_trimmed) GetTrimmer().CapTrimDone();
  return cap_trimmed;
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
