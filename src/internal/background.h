// The library's one background thread: idle trimming, kAuto's memory
// releases and decision saves, shadow measurement's samples. It runs below
// the server's threads (nice 19), is started by the first task, from
// whichever thread posts it (a gRPC call thread), and is stopped and joined
// at exit.
//
//   internal::PostBackground([] { ... });   // soon, once
//   internal::AddBackgroundTick([] { ... }); // every kBackgroundTick
//
// Never throws: if the thread cannot start (the process at its thread
// limit) nothing runs in the background (counted, logged once) and calls
// are served as usual.
//
// Thread safety: every function may be called from any thread.
#ifndef ARENARPC_SRC_INTERNAL_BACKGROUND_H_
#define ARENARPC_SRC_INTERNAL_BACKGROUND_H_

#include <chrono>
#include <cstdint>
#include <functional>

namespace arenarpc::internal {

inline constexpr std::chrono::milliseconds kBackgroundTick{100};

// Runs `task` soon on the background thread. False if it will not run: no
// thread, or kMaxQueued tasks already waiting.
bool PostBackground(std::function<void()> task);
// Runs `tick` every kBackgroundTick from now on, after the queued tasks.
void AddBackgroundTick(std::function<void()> tick);
// Tasks waiting plus tasks done, since the process started: a change means
// the thread is still at work (idle trimming waits for it).
uint64_t BackgroundProgress();
// The background thread's CPU so far, ns (0 before it started).
double BackgroundCpuNs();
// Threads that could not be started (GrpcStats reports it).
uint64_t BackgroundThreadFailures();

// Tests: how the thread is started (nullptr: a std::thread). The starter may
// throw, as std::thread does, or keep `body` without running it; the test
// then runs the queued tasks and one tick itself with RunBackgroundOnce().
using BackgroundThreadStarter = void (*)(std::function<void()> body);
void SetBackgroundThreadStarterForTesting(BackgroundThreadStarter starter);
void RunBackgroundOnce();

}  // namespace arenarpc::internal

#endif  // ARENARPC_SRC_INTERNAL_BACKGROUND_H_
