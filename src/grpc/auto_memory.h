// kAuto's memory: what a mode keeps between calls is given back
// once kAuto stops running calls in it, so learning does not leave the
// process holding every mode's memory at once (AutoOptions in
// arenarpc/grpc/server_options.h says what and what it costs). Used by
// src/grpc/method_meter.cc.
//
// Thread safety: AutoMemory::Note() from any thread; QueueModeRelease()
// from any thread; ReleaseModeMemory() from any thread.
// Lifetime: AutoMemory lives in its MethodMeter (never destroyed); the
// releasing thread is started on the first release and never stopped.
#ifndef ARENARPC_SRC_GRPC_AUTO_MEMORY_H_
#define ARENARPC_SRC_GRPC_AUTO_MEMORY_H_

#include <atomic>
#include <cstdint>

#include "arenarpc/allocation_mode.h"

namespace arenarpc::internal {

// Bit i: AllocationMode i.
constexpr unsigned ModeBit(AllocationMode m) {
  return 1u << static_cast<int>(m);
}

// One method's part: which modes' idle memory to give back after the
// learner moved (a timed call or a sample observed).
class AutoMemory {
 public:
  // A heap or arena trial of at least this many wire bytes leaves megabytes
  // idle (a heap trial of an 870 KB Cortex batch grew glibc's heap by 3.1-3.7
  // MiB: docs/raw/auto_budget/peak_rss/); smaller ones leave little, and
  // giving it back makes the mode's next trial pay for fresh pages, which
  // weighs more on a small call.
  static constexpr double kTrialBytes = 256 << 10;

  // After the learner observed a call (or a side sample: `trial_bytes` 0):
  // calls now run in `running`, the learner is `settled` or not; the call
  // just observed ran in `trial` with `trial_bytes` on the wire. Returns
  // the modes to give back, never `running`:
  //  - the mode calls ran in before, when `running` changed;
  //  - every other mode, when the learner just settled (its trials ended);
  //  - `trial` after a heap or arena trial (a call in that mode while calls
  //    run in another) of kTrialBytes or more: a heap trial grows the heap
  //    of the thread it ran on, an arena trial leaves its pages in that
  //    thread's cache, and the next trial runs on whichever thread, so left
  //    alone they add up (Cortex: 41 MiB against reuse's 34 with heap
  //    trials given back alone, docs/raw/auto_budget/peak_rss/). Reuse
  //    trials are not while it learns: a reuse trial's instance is what
  //    makes reuse cheap (given back, each reuse trial built a new one and
  //    measured reuse at arena's cost: Cortex settled on arena in 1 of 3
  //    rounds, docs/raw/auto_budget/peak_rss/run_all_trials);
  //  - `trial` reuse once settled in another mode: such a call took its
  //    messages before the decision (an async server posts calls ahead,
  //    each holding a reuse instance), and its instance would stay idle.
  unsigned Note(AllocationMode running, bool settled, AllocationMode trial,
                double trial_bytes);

 private:
  std::atomic<int> running_{-1};  // -1: no call observed yet
  std::atomic<bool> settled_{false};
};

// What gives back a method's kReuse instances (its two MessagePools' idle
// instances and thread caches); nullptr: none.
using TrimReusePools = void (*)();

// Gives back what `modes` keep idle, on the calling thread, and returns its
// CPU (ns):
//  - kHeap: malloc_trim(0) (glibc: the free blocks of every arena and the
//    main arena's top), through `trim_heap` if given (tests);
//  - kReuse: `trim_reuse` (MessagePool::Trim and ReleaseIdleCaches(0) of
//    the method's pools);
//  - kArena or kReuse: every thread's idle pooled arenas
//    (ReleaseIdleArenas(0)), the page pool's idle thread caches and depot
//    (PagePool::ReleaseIdleCaches(0), Trim()).
// Only idle memory: a call in flight keeps what it uses.
double ReleaseModeMemory(unsigned modes, TrimReusePools trim_reuse,
                         void (*trim_heap)() = nullptr);

// Queues ReleaseModeMemory(modes, trim_reuse) for the releasing thread
// (nice 19, off the call path; started on the first call), which passes
// the CPU it spent to `bill` (kAuto's learning budget). Queued releases of
// the same `trim_reuse` merge. If the thread cannot start, nothing is
// released (GrpcStats::background_thread_failures).
void QueueModeRelease(unsigned modes, TrimReusePools trim_reuse,
                      void (*bill)(double ns));

// Releases the releasing thread has run, and the modes they released, by
// mode (tests and stats).
uint64_t ModeReleasesDone();
uint64_t ModeReleases(AllocationMode mode);

}  // namespace arenarpc::internal

#endif  // ARENARPC_SRC_GRPC_AUTO_MEMORY_H_
