// The library's one background thread: idle trimming, kAuto's memory
// releases and decision saves, shadow measurement's samples. It runs at
// nice 19, starts with the first task or tick, sleeps until one is due (no
// wake-ups for nothing) and is joined at exit. If it cannot start, nothing
// runs in the background (counted, logged once); nothing throws.
//
//   internal::PostBackground([] { ... });        // soon, once
//   internal::PostBackground([] { ... }, 250ms); // not before then
//   internal::AddBackgroundTick([] { ... });     // every kBackgroundTick
//
// Thread safety: every function may be called from any thread.
#ifndef ARENARPC_SRC_INTERNAL_BACKGROUND_H_
#define ARENARPC_SRC_INTERNAL_BACKGROUND_H_

#include <chrono>
#include <cstdint>
#include <functional>

namespace arenarpc::internal {

inline constexpr std::chrono::milliseconds kBackgroundTick{100};

// False if `task` will not run: no thread, or (`bounded`) kMaxQueued tasks
// waiting. Tasks run in the order they are due. Unbounded: for a poster that
// keeps at most one task queued and must not lose it.
bool PostBackground(std::function<void()> task,
                    std::chrono::milliseconds delay = {}, bool bounded = true);
// Every kBackgroundTick from one tick after it is added.
void AddBackgroundTick(std::function<void()> tick);
// Tasks posted plus tasks done: a change means the thread has work, queued
// or running (idle trimming waits for it).
uint64_t BackgroundProgress();
// The thread's CPU so far, ns (0 before it started).
double BackgroundCpuNs();
// Threads that could not be started (GrpcStats reports it).
uint64_t BackgroundThreadFailures();

// Tests: how the thread is started (nullptr: a std::thread). The starter may
// throw, as std::thread does, or keep `body` without running it; the test
// then runs the tasks (due or not) and the ticks with RunBackgroundOnce().
using BackgroundThreadStarter = void (*)(std::function<void()> body);
void SetBackgroundThreadStarterForTesting(BackgroundThreadStarter starter);
void RunBackgroundOnce();

}  // namespace arenarpc::internal

#endif  // ARENARPC_SRC_INTERNAL_BACKGROUND_H_
