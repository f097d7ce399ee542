// std::mutex and std::condition_variable as a Clang thread-safety
// capability, so that -Wthread-safety checks the ABSL_GUARDED_BY rules
// (libstdc++'s std::mutex is not annotated); every call an inline forward.
// Not absl::Mutex: another lock (spinning, its own wait queue) and library.
#ifndef ARENARPC_INTERNAL_MUTEX_H_
#define ARENARPC_INTERNAL_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"

namespace arenarpc::internal {

class ABSL_LOCKABLE Mutex {  // not copyable, as std::mutex
 public:
  // BasicLockable (also for std::unique_lock over a run-time set of locks).
  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  bool TryLock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) {
    return mu_.try_lock();
  }

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `mu` for its scope, like std::lock_guard; any capability with
// lock() and unlock().
template <class M>
class ABSL_SCOPED_LOCKABLE ScopedLock {
 public:
  explicit ScopedLock(M* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_->lock();
  }
  // Takes over `mu`, held by the caller (after a TryLock).
  ScopedLock(M* mu, std::adopt_lock_t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu)
      : mu_(mu) {}
  ~ScopedLock() ABSL_UNLOCK_FUNCTION() { mu_->unlock(); }
  ScopedLock(const ScopedLock&) = delete;
  ScopedLock& operator=(const ScopedLock&) = delete;

 private:
  M* const mu_;
};
using MutexLock = ScopedLock<Mutex>;

// No predicate overloads: the analysis cannot see that a predicate runs
// under the lock, so callers loop.
class CondVar {
 public:
  void Wait(Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();  // still held: the caller's
  }
  // False if `deadline` passed.
  bool WaitUntil(Mutex* mu, std::chrono::steady_clock::time_point deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const std::cv_status status = cv_.wait_until(lock, deadline);
    lock.release();
    return status == std::cv_status::no_timeout;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace arenarpc::internal

#endif  // ARENARPC_INTERNAL_MUTEX_H_
