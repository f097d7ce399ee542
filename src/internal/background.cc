#include "src/internal/background.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "arenarpc/internal/cpu_clock.h"
#include "arenarpc/internal/mutex.h"

namespace arenarpc::internal {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxQueued = 256;

std::atomic<uint64_t> failures{0};
std::atomic<BackgroundThreadStarter> starter{nullptr};
std::atomic<uint64_t> progress{0};  // tasks posted plus tasks done
std::atomic<double> thread_cpu_ns{0};

struct Background {
  Mutex mu;
  CondVar cv;
  // By due time; tasks due together in the order posted.
  std::multimap<Clock::time_point, std::function<void()>> queue
      ABSL_GUARDED_BY(mu);
  std::vector<std::function<void()>> ticks ABSL_GUARDED_BY(mu);
  Clock::time_point next_tick ABSL_GUARDED_BY(mu) = Clock::time_point::max();
  bool started ABSL_GUARDED_BY(mu) = false;
  bool running ABSL_GUARDED_BY(mu) = false;
  bool stop ABSL_GUARDED_BY(mu) = false;
  std::thread thread;
};

Background& Get() {
  static Background* const b = new Background();  // outlives every call
  return *b;
}

// The tasks due by `until`, one at a time (none under the lock), then ticks.
void RunPass(Clock::time_point until, bool tick) {
  Background& b = Get();
  for (;;) {
    std::function<void()> task;
    {
      MutexLock lock(&b.mu);
      if (b.queue.empty() || b.queue.begin()->first > until) break;
      task = std::move(b.queue.begin()->second);
      b.queue.erase(b.queue.begin());
    }
    task();
    progress.fetch_add(1, std::memory_order_relaxed);
  }
  std::vector<std::function<void()>> ticks;
  if (tick) {
    MutexLock lock(&b.mu);
    ticks = b.ticks;
  }
  for (auto& t : ticks) t();
  thread_cpu_ns.store(ThreadCpuNs(), std::memory_order_relaxed);
}

void Run() {
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19);
  Background& b = Get();
  for (;;) {
    Clock::time_point now;
    bool tick = false;
    {
      MutexLock lock(&b.mu);
      for (;;) {  // until a task or the tick is due (no ticks: next_tick max)
        if (b.stop) return;
        now = Clock::now();
        const Clock::time_point wake =
            std::min(b.next_tick, b.queue.empty() ? Clock::time_point::max()
                                                  : b.queue.begin()->first);
        if (wake <= now) break;
        if (wake == Clock::time_point::max()) {
          b.cv.Wait(&b.mu);
        } else {
          b.cv.WaitUntil(&b.mu, wake);
        }
      }
      tick = now >= b.next_tick;
      if (tick) b.next_tick = now + kBackgroundTick;
    }
    RunPass(now, tick);
  }
}

// At exit: the thread ends before static objects are destroyed.
void Stop() {
  Background& b = Get();
  {
    MutexLock lock(&b.mu);
    b.stop = true;
    b.cv.SignalAll();
  }
  if (b.thread.joinable() && b.thread.get_id() != std::this_thread::get_id())
    b.thread.join();
}

void Failed(const char* reason) {
  if (failures.fetch_add(1) != 0) return;
  std::fprintf(stderr,
               "arenarpc: cannot start the background thread (%s); "
               "running without it (GrpcStats::background_thread_failures)\n",
               reason);
}

// Lazily, from the first task: a call thread, where nothing may throw.
bool Start(Background& b) ABSL_EXCLUSIVE_LOCKS_REQUIRED(b.mu) {
  if (b.started) return b.running;
  b.started = true;
  try {
    if (BackgroundThreadStarter start = starter.load()) {
      start(&Run);
    } else {
      b.thread = std::thread(&Run);
      std::atexit(&Stop);
    }
    b.running = true;
  } catch (const std::exception& e) {
    Failed(e.what());
  } catch (...) {
    Failed("unknown error");
  }
  return b.running;
}

}  // namespace

bool PostBackground(std::function<void()> task, std::chrono::milliseconds delay,
                    bool bounded) {
  Background& b = Get();
  MutexLock lock(&b.mu);
  if (!Start(b) || (bounded && b.queue.size() >= kMaxQueued)) return false;
  b.queue.emplace(Clock::now() + delay, std::move(task));
  progress.fetch_add(1, std::memory_order_relaxed);
  b.cv.Signal();
  return true;
}

void AddBackgroundTick(std::function<void()> tick) {
  Background& b = Get();
  MutexLock lock(&b.mu);
  if (b.ticks.empty()) b.next_tick = Clock::now() + kBackgroundTick;
  b.ticks.push_back(std::move(tick));
  Start(b);
  b.cv.Signal();  // the thread may sleep with no deadline
}

void RunBackgroundOnce() { RunPass(Clock::time_point::max(), /*tick=*/true); }

uint64_t BackgroundProgress() {
  return progress.load(std::memory_order_relaxed);
}
double BackgroundCpuNs() {
  return thread_cpu_ns.load(std::memory_order_relaxed);
}
uint64_t BackgroundThreadFailures() { return failures.load(); }
void SetBackgroundThreadStarterForTesting(BackgroundThreadStarter s) {
  starter.store(s);
}

}  // namespace arenarpc::internal
