#include "src/internal/background.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "arenarpc/internal/cpu_clock.h"
#include "arenarpc/internal/mutex.h"

namespace arenarpc::internal {
namespace {

constexpr size_t kMaxQueued = 256;

std::atomic<uint64_t> failures{0};
std::atomic<BackgroundThreadStarter> starter{nullptr};

class Background {
 public:
  static Background& Get() {
    static Background* const b = new Background();  // outlives every call
    return *b;
  }

  bool Post(std::function<void()> task) {
    MutexLock lock(&mu_);
    if (!Start() || queue_.size() >= kMaxQueued) return false;
    queue_.push_back(std::move(task));
    progress_.fetch_add(1, std::memory_order_relaxed);
    cv_.Signal();
    return true;
  }
  void AddTick(std::function<void()> tick) {
    MutexLock lock(&mu_);
    ticks_.push_back(std::move(tick));
    Start();
  }
  uint64_t progress() const {
    return progress_.load(std::memory_order_relaxed);
  }
  double cpu_ns() const { return cpu_ns_.load(std::memory_order_relaxed); }

  // The queued tasks, then every tick. On the background thread (or a
  // test's).
  void RunOnce() {
    for (;;) {
      std::function<void()> task;
      {
        MutexLock lock(&mu_);
        if (queue_.empty()) break;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
      progress_.fetch_add(1, std::memory_order_relaxed);
    }
    std::vector<std::function<void()>> ticks;
    {
      MutexLock lock(&mu_);
      ticks = ticks_;
    }
    for (auto& tick : ticks) tick();
    cpu_ns_.store(ThreadCpuNs(), std::memory_order_relaxed);
  }

 private:
  // Lazily, from the first task: a call thread, where nothing may throw.
  bool Start() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (started_) return running_;
    started_ = true;
    try {
      if (BackgroundThreadStarter start = starter.load()) {
        start([this] { Run(); });
      } else {
        thread_ = std::thread([this] { Run(); });
        std::atexit([] { Get().Stop(); });
      }
      running_ = true;
    } catch (const std::exception& e) {
      Failed(e.what());
    } catch (...) {
      Failed("unknown error");
    }
    return running_;
  }
  static void Failed(const char* reason) {
    if (failures.fetch_add(1) != 0) return;
    std::fprintf(stderr,
                 "arenarpc: cannot start the background thread (%s); "
                 "running without it (GrpcStats::background_thread_failures)\n",
                 reason);
  }
  void Run() {
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19);
    for (;;) {
      {
        MutexLock lock(&mu_);
        if (queue_.empty() && !stop_) {
          cv_.WaitUntil(&mu_,
                        std::chrono::steady_clock::now() + kBackgroundTick);
        }
        if (stop_) return;
      }
      RunOnce();
    }
  }
  // At exit: the thread ends before static objects are destroyed.
  void Stop() {
    {
      MutexLock lock(&mu_);
      stop_ = true;
      cv_.SignalAll();
    }
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) {
      thread_.join();
    }
  }

  Mutex mu_;
  CondVar cv_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  std::vector<std::function<void()>> ticks_ ABSL_GUARDED_BY(mu_);
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
  std::atomic<uint64_t> progress_{0};
  std::atomic<double> cpu_ns_{0};
};

}  // namespace

bool PostBackground(std::function<void()> task) {
  return Background::Get().Post(std::move(task));
}
void AddBackgroundTick(std::function<void()> tick) {
  Background::Get().AddTick(std::move(tick));
}
uint64_t BackgroundProgress() { return Background::Get().progress(); }
double BackgroundCpuNs() { return Background::Get().cpu_ns(); }
uint64_t BackgroundThreadFailures() { return failures.load(); }
void SetBackgroundThreadStarterForTesting(BackgroundThreadStarter s) {
  starter.store(s);
}
void RunBackgroundOnce() { Background::Get().RunOnce(); }

}  // namespace arenarpc::internal
