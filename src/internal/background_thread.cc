#include "src/internal/background_thread.h"

#include <atomic>
#include <cstdio>
#include <exception>
#include <thread>
#include <utility>

namespace arenarpc::internal {
namespace {
std::atomic<uint64_t> failures{0};
std::atomic<BackgroundThreadStarter> starter{nullptr};
}  // namespace

namespace {
// Counts a failed start; logs the first of the process.
void Failed(const char* what, const char* reason) {
  if (failures.fetch_add(1) != 0) return;
  std::fprintf(stderr,
               "arenarpc: cannot start the %s thread (%s); running without "
               "it (GrpcStats::background_thread_failures)\n",
               what, reason);
}
}  // namespace

bool StartBackgroundThread(const char* what,
                           std::function<void()> body) noexcept {
  try {
    if (BackgroundThreadStarter start = starter.load()) {
      start(std::move(body));
    } else {
      std::thread(std::move(body)).detach();
    }
    return true;
  } catch (const std::exception& e) {
    Failed(what, e.what());  // while `e` lives
  } catch (...) {
    Failed(what, "unknown error");
  }
  return false;
}

uint64_t BackgroundThreadFailures() { return failures.load(); }

void SetBackgroundThreadStarterForTesting(BackgroundThreadStarter s) {
  starter.store(s);
}

}  // namespace arenarpc::internal
