// The library's background thread on its own: tasks run in the order they
// are due, a delayed one not before its delay; without ticks the thread
// sleeps (it does not wake: its context switches, read from /proc, stay
// put); a tick added wakes it every kBackgroundTick. Label concurrency: run
// under TSan too.
#include "src/internal/background.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace arenarpc::internal {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

bool WaitFor(const std::atomic<int>& n, int at_least) {
  const auto end = Clock::now() + 10s;
  while (n.load() < at_least) {
    if (Clock::now() > end) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// The background thread's voluntary context switches (each sleep is one):
// it is the process's only thread at nice 19. -1 if not found.
long BackgroundThreadSleeps() {
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream stat(task.path() / "stat");
    std::string line;
    std::getline(stat, line);
    std::istringstream fields(line.substr(line.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 19; ++i) fields >> field;  // 19: nice
    if (field != "19") continue;
    std::ifstream status(task.path() / "status");
    while (std::getline(status, line)) {
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0)
        return std::stol(line.substr(line.find(':') + 1));
    }
  }
  return -1;
}

TEST(BackgroundTest, TasksRunInTheOrderTheyAreDue) {
  std::mutex mu;
  std::vector<int> order;
  std::atomic<int> done{0};
  Clock::duration delayed_after{};
  const Clock::time_point posted = Clock::now();
  ASSERT_TRUE(PostBackground(
      [&] {
        std::lock_guard<std::mutex> lock(mu);
        order.push_back(2);
        delayed_after = Clock::now() - posted;
        done.fetch_add(1);
      },
      150ms));
  ASSERT_TRUE(PostBackground([&] {
    std::lock_guard<std::mutex> lock(mu);
    order.push_back(1);
    done.fetch_add(1);
  }));
  ASSERT_TRUE(WaitFor(done, 2));
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_GE(delayed_after, 150ms);
}

TEST(BackgroundTest, SleepsWithoutTicksAndWakesForOne) {
  std::atomic<int> done{0};
  ASSERT_TRUE(PostBackground([&] { done.fetch_add(1); }));
  ASSERT_TRUE(WaitFor(done, 1));
  std::this_thread::sleep_for(50ms);  // the pass ends after its task
  const long sleeps = BackgroundThreadSleeps();
  ASSERT_GE(sleeps, 0) << "no thread at nice 19";
  std::this_thread::sleep_for(3 * kBackgroundTick + 50ms);
  EXPECT_EQ(BackgroundThreadSleeps(), sleeps)
      << "the thread woke with nothing to do";
  const double cpu = BackgroundCpuNs();

  std::atomic<int> ticks{0};
  const Clock::time_point added = Clock::now();
  AddBackgroundTick([&] { ticks.fetch_add(1); });
  ASSERT_TRUE(WaitFor(ticks, 3));
  EXPECT_GE(Clock::now() - added, 2 * kBackgroundTick);
  EXPECT_NE(BackgroundCpuNs(), cpu);
}

}  // namespace
}  // namespace arenarpc::internal
