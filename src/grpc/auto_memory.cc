#include "src/grpc/auto_memory.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <array>
#include <atomic>
#include <chrono>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "arenarpc/grpc/internal/counters.h"
#include "arenarpc/internal/mutex.h"
#include "src/internal/background_thread.h"

namespace arenarpc::internal {
namespace {

constexpr unsigned kAllModes = (1u << kNumAllocationModes) - 1;

double ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

void TrimHeap() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

std::atomic<uint64_t> releases_done{0};
std::array<std::atomic<uint64_t>, kNumAllocationModes> released_modes = {};

class Releaser {
 public:
  static Releaser& Get() {
    static Releaser* const releaser = new Releaser();  // never destroyed
    return *releaser;
  }

  void Queue(unsigned modes, TrimReusePools trim_reuse, void (*bill)(double)) {
    MutexLock lock(&mu_);
    if (!started_) {
      started_ = true;
      running_ =
          StartBackgroundThread("arenarpc auto memory", [this] { Run(); });
    }
    if (!running_) return;
    for (Job& j : jobs_) {
      if (j.trim_reuse == trim_reuse && j.bill == bill) {
        j.modes |= modes;
        cv_.Signal();
        return;
      }
    }
    jobs_.push_back(Job{modes, trim_reuse, bill});
    cv_.Signal();
  }

 private:
  struct Job {
    unsigned modes;
    TrimReusePools trim_reuse;
    void (*bill)(double);
  };

  void Run() {
    // Below the server's threads: giving memory back must not delay calls.
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19);
    for (;;) {
      std::vector<Job> jobs;
      {
        MutexLock lock(&mu_);
        while (jobs_.empty()) cv_.Wait(&mu_);
        jobs.swap(jobs_);
      }
      for (const Job& j : jobs) {
        const double ns = ReleaseModeMemory(j.modes, j.trim_reuse);
        if (j.bill != nullptr) j.bill(ns);
        releases_done.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }

  Mutex mu_;
  CondVar cv_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<Job> jobs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

unsigned AutoMemory::Note(AllocationMode running, bool settled,
                          AllocationMode trial, double trial_bytes) {
  const int now = static_cast<int>(running);
  unsigned release = 0;
  const int before = running_.exchange(now, std::memory_order_relaxed);
  if (before >= 0 && before != now) release |= 1u << before;
  if (settled) {
    if (!settled_.exchange(true, std::memory_order_relaxed)) {
      release |= kAllModes;  // its trials ended
    }
  } else {
    settled_.store(false, std::memory_order_relaxed);  // a re-check
  }
  if (trial != AllocationMode::kReuse && trial_bytes >= kTrialBytes) {
    release |= ModeBit(trial);
  } else if (trial == AllocationMode::kReuse && settled) {
    // A reuse trial ending after the decision (an async server's calls
    // posted before it) would leave its instance idle for good.
    release |= ModeBit(trial);
  }
  return release & ~(1u << now);
}

double ReleaseModeMemory(unsigned modes, TrimReusePools trim_reuse,
                         void (*trim_heap)()) {
  const double start = ThreadCpuNs();
  if ((modes & ModeBit(AllocationMode::kReuse)) != 0 && trim_reuse != nullptr) {
    trim_reuse();  // its instances' arenas land in this thread's caches
  }
  if ((modes & (ModeBit(AllocationMode::kArena) |
                ModeBit(AllocationMode::kReuse))) != 0) {
    ReleaseIdleArenasAndPages(std::chrono::milliseconds(0));
  }
  if ((modes & ModeBit(AllocationMode::kHeap)) != 0) {
    // Last: what the pools above freed to the heap goes back too.
    (trim_heap != nullptr ? trim_heap : &TrimHeap)();
  }
  for (int i = 0; i < kNumAllocationModes; ++i) {
    if ((modes & (1u << i)) != 0) {
      released_modes[i].fetch_add(1, std::memory_order_relaxed);
    }
  }
  return ThreadCpuNs() - start;
}

void QueueModeRelease(unsigned modes, TrimReusePools trim_reuse,
                      void (*bill)(double ns)) {
  if (modes == 0) return;
  Releaser::Get().Queue(modes, trim_reuse, bill);
}

uint64_t ModeReleasesDone() {
  return releases_done.load(std::memory_order_relaxed);
}

uint64_t ModeReleases(AllocationMode mode) {
  return released_modes[static_cast<int>(mode)].load(std::memory_order_relaxed);
}

}  // namespace arenarpc::internal
