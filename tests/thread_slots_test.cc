// ThreadSlots' thread-exit hooks: run in parallel, outside any global lock,
// and never after Unregister returns. Label concurrency: run under TSan too.
#include "arenarpc/internal/thread_slots.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "arenarpc/object_pool.h"
#include "arenarpc/page_pool.h"

namespace arenarpc::internal {
namespace {

using namespace std::chrono_literals;

// Runs `body` on a new thread and joins it; if it has not finished within
// `limit` (a deadlock), fails loudly instead of hanging the test.
void RunWithWatchdog(std::function<void()> body, std::chrono::seconds limit,
                     const char* what) {
  std::promise<void> done;
  std::future<void> finished = done.get_future();
  std::thread t([&] {
    body();
    // set_value_at_thread_exit: only after this thread's exit hooks ran.
    done.set_value_at_thread_exit();
  });
  if (finished.wait_for(limit) != std::future_status::ready) {
    std::fprintf(stderr, "FATAL: %s did not finish within %lld s (deadlock)\n",
                 what, static_cast<long long>(limit.count()));
    std::abort();
  }
  t.join();
}

// An owner that runs `on_exit` for each thread's value.
class TestOwner final : public ThreadSlots::Owner {
 public:
  explicit TestOwner(std::function<void(void*)> on_exit)
      : on_exit_(std::move(on_exit)), key_(ThreadSlots::Register(this)) {}
  ~TestOwner() { Unregister(); }
  void Unregister() {
    ThreadSlots::Unregister(key_);
    unregistered_.store(true);
  }
  ThreadSlots::Key key() const { return key_; }
  void OnThreadExit(void* value) override {
    // The guarantee under test: no hook after Unregister returned.
    if (unregistered_.load()) late_hooks_.fetch_add(1);
    on_exit_(value);
    hooks_.fetch_add(1);
  }
  int hooks() const { return hooks_.load(); }
  int late_hooks() const { return late_hooks_.load(); }

 private:
  std::function<void(void*)> on_exit_;
  ThreadSlots::Key key_;
  std::atomic<bool> unregistered_{false};
  std::atomic<int> hooks_{0};
  std::atomic<int> late_hooks_{0};
};

struct Payload {
  int value[4];
};

TEST(ThreadSlotsTest, ValuesArePerThreadAndPerOwner) {
  TestOwner a([](void*) {});
  TestOwner b([](void*) {});
  int va = 0;
  int vb = 0;
  EXPECT_EQ(ThreadSlots::Get(a.key()), nullptr);
  ASSERT_TRUE(ThreadSlots::Set(a.key(), &va));
  ASSERT_TRUE(ThreadSlots::Set(b.key(), &vb));
  EXPECT_EQ(ThreadSlots::Get(a.key()), &va);
  EXPECT_EQ(ThreadSlots::Get(b.key()), &vb);
  int other = 0;
  std::thread t([&] {
    EXPECT_EQ(ThreadSlots::Get(a.key()), nullptr);  // not this thread's
    ASSERT_TRUE(ThreadSlots::Set(a.key(), &other));
    EXPECT_EQ(ThreadSlots::Get(a.key()), &other);
  });
  t.join();
  EXPECT_EQ(ThreadSlots::Get(a.key()), &va);
  EXPECT_EQ(a.hooks(), 1);  // the exited thread's value only
  EXPECT_EQ(b.hooks(), 0);
  ASSERT_TRUE(ThreadSlots::Set(a.key(), nullptr));
  ASSERT_TRUE(ThreadSlots::Set(b.key(), nullptr));
}

TEST(ThreadSlotsTest, AKeyReusedByALaterOwnerMissesTheOldValue) {
  int old_value = 0;
  ThreadSlots::Key old_key;
  {
    TestOwner dead([](void*) {});
    old_key = dead.key();
    ASSERT_TRUE(ThreadSlots::Set(old_key, &old_value));
  }
  TestOwner later([](void*) {});
  EXPECT_NE(later.key().generation, old_key.generation);
  EXPECT_EQ(ThreadSlots::Get(later.key()), nullptr);
}

TEST(ThreadSlotsTest, ManyOwnersOnOneThread) {
  // More owners than a thread's first array holds: it grows, values kept.
  constexpr int kOwners = 300;
  std::vector<std::unique_ptr<TestOwner>> owners;
  std::vector<int> values(kOwners);
  std::atomic<int> hooked{0};
  for (int i = 0; i < kOwners; ++i) {
    owners.push_back(std::make_unique<TestOwner>([&, i](void* v) {
      EXPECT_EQ(v, &values[i]);
      hooked.fetch_add(1);
    }));
  }
  std::thread t([&] {
    for (int i = 0; i < kOwners; ++i) {
      ASSERT_TRUE(ThreadSlots::Set(owners[i]->key(), &values[i]));
    }
    for (int i = 0; i < kOwners; ++i) {
      EXPECT_EQ(ThreadSlots::Get(owners[i]->key()), &values[i]);
    }
  });
  t.join();
  EXPECT_EQ(hooked.load(), kOwners);
}

TEST(ThreadSlotsTest, ExitHookMayCreateAndDestroyPools) {
  // Thread-exit cleanup that makes and destroys pools (as a message
  // destructor may): Register/Unregister from inside a hook. Under a global
  // lock held across the hook this deadlocks.
  std::atomic<int> used{0};
  TestOwner owner([&](void*) {
    PagePool pages(PagePoolOptions{});
    void* page = pages.Allocate();
    ASSERT_NE(page, nullptr);
    pages.Deallocate(page);
    ObjectPool<Payload> objects;
    objects.Delete(objects.New());
    used.fetch_add(1);
  });
  int value = 0;
  RunWithWatchdog([&] { ASSERT_TRUE(ThreadSlots::Set(owner.key(), &value)); },
                  10s, "a thread whose exit hook makes and destroys pools");
  EXPECT_EQ(used.load(), 1);
  EXPECT_EQ(owner.hooks(), 1);
}

TEST(ThreadSlotsTest, ExitHooksOfManyThreadsRunInParallel) {
  // Every hook waits until all kThreads hooks are inside OnThreadExit at
  // once: possible only if exits do not serialise on a lock.
  constexpr int kThreads = 6;
  std::mutex mu;
  std::condition_variable cv;
  int inside = 0;
  bool all_met = true;
  TestOwner owner([&](void*) {
    std::unique_lock<std::mutex> lock(mu);
    ++inside;
    cv.notify_all();
    if (!cv.wait_for(lock, 3s, [&] { return inside == kThreads; })) {
      all_met = false;
    }
  });
  std::vector<std::thread> threads;
  int values[kThreads];
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] { ThreadSlots::Set(owner.key(), &values[t]); });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_TRUE(all_met) << "thread exits ran one at a time";
  EXPECT_EQ(owner.hooks(), kThreads);
}

TEST(ThreadSlotsTest, UnregisterWaitsForRunningHook) {
  std::promise<void> hook_entered;
  std::promise<void> release_hook;
  std::shared_future<void> release = release_hook.get_future().share();
  std::atomic<bool> hook_finished{false};
  auto owner = std::make_unique<TestOwner>([&](void*) {
    hook_entered.set_value();
    release.wait();
    hook_finished.store(true);
  });
  int value = 0;
  std::thread exiting([&] { ThreadSlots::Set(owner->key(), &value); });
  hook_entered.get_future().wait();
  std::atomic<bool> unregistered{false};
  std::thread unregistering([&] {
    owner->Unregister();
    // The hook finished before Unregister returned.
    EXPECT_TRUE(hook_finished.load());
    unregistered.store(true);
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(unregistered.load());
  release_hook.set_value();
  unregistering.join();
  exiting.join();
  EXPECT_TRUE(unregistered.load());
  EXPECT_EQ(owner->late_hooks(), 0);
}

TEST(ThreadSlotsTest, ThreadsExitWhileOwnersAreUnregistered) {
  // Threads keep exiting with values for several owners while half of the
  // owners are unregistered: no hook after Unregister returns, every
  // registered owner sees every thread, no deadlock.
  constexpr int kOwners = 4;
  constexpr int kRounds = 30;
  constexpr int kThreadsPerRound = 8;
  static int value = 0;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<std::unique_ptr<TestOwner>> owners;
    for (int o = 0; o < kOwners; ++o) {
      owners.push_back(std::make_unique<TestOwner>([](void* v) {
        EXPECT_EQ(v, &value);
        std::this_thread::yield();  // widen the window for Unregister
      }));
    }
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreadsPerRound; ++t) {
      threads.emplace_back([&] {
        for (auto& o : owners) ThreadSlots::Set(o->key(), &value);
      });
    }
    for (int o = 0; o < kOwners / 2; ++o) owners[o]->Unregister();
    for (std::thread& t : threads) t.join();
    for (int o = 0; o < kOwners; ++o) {
      EXPECT_EQ(owners[o]->late_hooks(), 0) << "hook after Unregister";
      if (o >= kOwners / 2) {
        EXPECT_EQ(owners[o]->hooks(), kThreadsPerRound);
      }
    }
  }
}

}  // namespace
}  // namespace arenarpc::internal
