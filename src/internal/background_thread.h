// Starting the library's background threads (idle trimming, kAuto's and
// shadow measuring) without throwing: they are started lazily, from
// whichever thread first needs them (a gRPC call thread), where a
// std::system_error (the process at its thread limit) must not escape.
//
//   if (!internal::StartBackgroundThread("idle trimming", [this] { Run(); })) {
//     // no background work: counted, and logged once per process
//   }
//
// Thread safety: every function may be called from any thread.
#ifndef ARENARPC_SRC_INTERNAL_BACKGROUND_THREAD_H_
#define ARENARPC_SRC_INTERNAL_BACKGROUND_THREAD_H_

#include <cstdint>
#include <functional>

namespace arenarpc::internal {

// Runs `body` on a new detached thread. Never throws: if the thread cannot
// be started (std::system_error, std::bad_alloc) returns false, counts the
// failure (BackgroundThreadFailures()) and, the first time in the process,
// writes one line naming `what` to stderr.
bool StartBackgroundThread(const char* what,
                           std::function<void()> body) noexcept;
// Background threads that could not be started (GrpcStats reports it).
uint64_t BackgroundThreadFailures();

// Tests: replaces how background threads are started (nullptr: a detached
// std::thread). The starter may throw, as std::thread does, or keep `body`
// without running it (the test then drives the work itself).
using BackgroundThreadStarter = void (*)(std::function<void()> body);
void SetBackgroundThreadStarterForTesting(BackgroundThreadStarter starter);

}  // namespace arenarpc::internal

#endif  // ARENARPC_SRC_INTERNAL_BACKGROUND_THREAD_H_
