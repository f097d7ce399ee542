// Idle trimming and the pooled-memory cap (counters.h), on the background
// thread.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
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
#include "arenarpc/malloc_tuning.h"
#include "arenarpc/page_pool.h"
#include "src/internal/background.h"

namespace arenarpc::internal {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using PoolTrim = void (*)(void*, milliseconds);

std::atomic<uint64_t> pooled_cap{0};  // 0: none; read on every pooled call
std::atomic<uint64_t> over_cap_calls{0}, idle_trims{0}, cap_trims{0};

// Installs with different values: the smallest set one (0 is "off") wins.
template <class T>
void LowerTo(std::atomic<T>& setting, T value) {
  T cur = setting.load();
  while ((cur == 0 || value < cur) &&
         !setting.compare_exchange_weak(cur, value)) {
  }
}

// What changes while the server works: calls, streamed messages, and the
// background thread's tasks (shadow's samples free memory after their calls
// ended).
uint64_t Activity() {
  uint64_t n = BackgroundProgress();
  for (const GrpcModeStats& m : GetGrpcStats().modes)
    n += m.calls + m.in_flight;
  for (uint64_t m : GetStreamTotals().messages) n += m;
  return n + GetStreamArenaTotals().messages;
}

// The background thread's state (src/internal/background.h) for trimming.
std::atomic<int> idle_ms{0};  // 0: no idle trimming
std::atomic<bool> ticking{false}, cap_trim_posted{false}, cap_trimmed{false};
std::atomic<bool> test_clock{false};  // ticks only at a test's times
struct Pools {
  Mutex mu;
  std::vector<std::pair<PoolTrim, void*>> trims ABSL_GUARDED_BY(mu);
};
Pools& GetPools() {
  static Pools* const pools = new Pools();  // never destroyed
  return *pools;
}

// The pools' depots, and what threads unused for `idle_for` cache
// (instances, arenas, pages): a burst's threads, idle in a gRPC thread
// pool, would pin them against the cap forever otherwise.
void TrimPools(milliseconds idle_for) {
  std::vector<std::pair<PoolTrim, void*>> trims;
  {
    Pools& pools = GetPools();
    MutexLock lock(&pools.mu);
    trims = pools.trims;
  }
  for (auto& [trim, pool] : trims) trim(pool, idle_for);
  ReleaseIdleArenasAndPages(idle_for);
}

// Tick()'s, the background thread's alone. `last` starts at 0, not at
// Activity(): at nice 19 the thread may first run after the calls it should
// trim after.
uint64_t last = 0;
std::optional<Clock::time_point> last_change;
bool trimmed = false;

// One tick at `now`: lets the next cap trim be posted, and trims once calls
// and background work stopped for idle_ms (again after any later activity).
// Returns true if a cap trim happened since the last tick.
bool Tick(Clock::time_point now) {
  const bool cap = cap_trimmed.exchange(false);
  cap_trim_posted.store(false, std::memory_order_relaxed);
  const int idle = idle_ms.load(std::memory_order_relaxed);
  if (idle == 0) return cap;
  const uint64_t activity = Activity();
  if (!last_change.has_value() || activity != last) {
    last = activity;
    last_change = now;
    trimmed = false;
  } else if (!trimmed && now - *last_change >= milliseconds(idle)) {
    TrimPools(milliseconds(0));  // the server is idle
    TrimHeap();                  // glibc keeps freed heap memory otherwise
    idle_trims.fetch_add(1, std::memory_order_relaxed);
    trimmed = true;
  }
  return cap;
}

void StartTicks() {
  if (ticking.exchange(true)) return;
  AddBackgroundTick([] {
    if (!test_clock.load(std::memory_order_relaxed)) Tick(Clock::now());
  });
}

}  // namespace

void RegisterMessagePoolTrim(PoolTrim trim, void* pool) {
  Pools& pools = GetPools();
  MutexLock lock(&pools.mu);
  pools.trims.emplace_back(trim, pool);
}

bool IdleTrimTickForTesting(Clock::time_point now) {
  test_clock.store(true, std::memory_order_relaxed);
  RunBackgroundOnce();  // a posted cap trim, if any
  return Tick(now);
}

void ApplyServerLimits(const ServerOptions& options) {
  if (options.max_pooled_bytes > 0)
    LowerTo(pooled_cap, options.max_pooled_bytes);
  if (options.idle_trim.idle_ms > 0) {
    LowerTo(idle_ms, options.idle_trim.idle_ms);
    StartTicks();
  }
}

void ReleaseIdleArenasAndPages(milliseconds idle_for) {
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
  // Trim the depots soon, at most once a tick (also with idle trimming off),
  // keeping what threads used in the last second.
  if (!cap_trim_posted.exchange(true, std::memory_order_relaxed)) {
    StartTicks();
    if (!PostBackground([] {
          TrimPools(std::chrono::seconds(1));
          cap_trims.fetch_add(1, std::memory_order_relaxed);
          cap_trimmed.store(true);
        })) {
      cap_trim_posted.store(false, std::memory_order_relaxed);
    }
  }
  return true;
}

uint64_t OverCapHeapCalls() {
  return over_cap_calls.load(std::memory_order_relaxed);
}
uint64_t IdleTrims() { return idle_trims.load(std::memory_order_relaxed); }
uint64_t CapTrims() { return cap_trims.load(std::memory_order_relaxed); }

}  // namespace arenarpc::internal
