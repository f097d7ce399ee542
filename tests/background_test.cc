// The library's background thread on its own: tasks run in the order they
// are due, a delayed one not before its delay; without ticks the thread
// sleeps (it does not wake: its context switches, read from /proc, stay
// put); a tick added wakes it every kBackgroundTick. Label concurrency: run
// under TSan too.
#include "src/internal/background.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <memory>
#include <mutex>
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

// The background thread's id, as a task it runs reads it.
pid_t BackgroundTid() {
  auto tid = std::make_shared<std::atomic<int>>(0);
  if (!PostBackground([tid] { tid->store(syscall(SYS_gettid)); })) return -1;
  return WaitFor(*tid, 1) ? tid->load() : -1;
}

// Thread `tid`'s state (stat's third field: 'S' asleep).
char ThreadState(pid_t tid) {
  std::ifstream stat("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const size_t paren = line.rfind(')');
  return paren == std::string::npos || paren + 2 >= line.size()
             ? '?'
             : line[paren + 2];
}

// Thread `tid`'s voluntary context switches (each sleep is one); -1 if
// not found.
long ThreadSleeps(pid_t tid) {
  std::ifstream status("/proc/self/task/" + std::to_string(tid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("voluntary_ctxt_switches:", 0) == 0)
      return std::stol(line.substr(line.find(':') + 1));
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
  const pid_t tid = BackgroundTid();
  ASSERT_GT(tid, 0);
  // Asleep after its task: at nice 19 on a busy machine it may get there
  // late.
  const auto end = Clock::now() + 10s;
  while (ThreadState(tid) != 'S' && Clock::now() < end)
    std::this_thread::sleep_for(1ms);
  ASSERT_EQ(ThreadState(tid), 'S');
  const long sleeps = ThreadSleeps(tid);
  ASSERT_GE(sleeps, 0);
  std::this_thread::sleep_for(3 * kBackgroundTick + 50ms);
  EXPECT_EQ(ThreadSleeps(tid), sleeps) << "the thread woke with nothing to do";
  const double cpu = BackgroundCpuNs();

  std::atomic<int> ticks{0};
  const Clock::time_point added = Clock::now();
  AddBackgroundTick([&] { ticks.fetch_add(1); });
  ASSERT_TRUE(WaitFor(ticks, 3));
  EXPECT_GE(Clock::now() - added, 3 * kBackgroundTick);  // the first after one
  EXPECT_NE(BackgroundCpuNs(), cpu);
}

}  // namespace
}  // namespace arenarpc::internal
