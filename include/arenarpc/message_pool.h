// Message reuse with bounded growth.
//
//   arenarpc::MessagePool<MyRequest> pool;          // one per type, long-lived
//
//   {
//     arenarpc::PooledMessage<MyRequest> req = pool.Acquire();   // empty
//     if (!req.ParseFrom(wire)) { /* malformed: req is empty again */ }
//     Handle(*req);
//   }  // back to the pool: cleared, capacity kept (unless it grew too big)
//
//   // Generic/dynamic services: a pool from a prototype.
//   arenarpc::MessagePool<google::protobuf::Message> any(&prototype);
//
// Reuse keeps what protobuf keeps on Clear(): the elements and capacity of
// repeated fields, string buffers, maps' storage and sub-messages with a
// has-bit. Two guards keep memory from creeping up to the largest request
// ever seen:
//  - growth guard: each instance remembers the largest content it held
//    (serialized bytes). On return, one above the bound
//    min(hard_cap_bytes, slack x the `percentile` of recent sizes) does not
//    go back to the common cache: it is kept in a small "large" reserve
//    while the reserve holds less than large_reserve_bytes, else destroyed.
//    ParseFrom() of an input above the bound swaps in an instance from the
//    reserve, so large inputs reuse large instances and small inputs never
//    carry their capacity. The size is the hint the caller gave
//    (set_size_hint, e.g. the wire size), else the cached size if the
//    message was serialized or sized during this use (free), else
//    ByteSizeLong() (one walk, no reflection).
//  - idle bound: at most idle_per_thread instances per thread plus idle_max
//    process-wide; the rest are destroyed.
//
// The proto3 trap: a singular message field without `optional` has no
// has-bit, and its generated Clear() deletes the sub-message, so naive
// reuse rebuilds that whole subtree every time. On return, the pool detaches
// such sub-messages (recursively through singular fields) and keeps them,
// cleared, beside the instance; PooledMessage::ParseFrom() lends them back
// for the parse and detaches again those the wire did not contain, so the
// result is byte-for-byte a fresh parse, presence included. Limits: the
// subtrees are only reused by ParseFrom() (not by code that builds the
// message or parses it itself), and sub-messages inside repeated elements
// are rebuilt as protobuf does (no public API can lend them to the
// parser). Instances live on the heap: see docs/MESSAGE_POOL.md for why and
// for measurements.
//
// Thread safety: Acquire() and returning handles may happen concurrently on
// any threads (per-thread caches; a handle may be returned on another
// thread). A PooledMessage itself is not thread-safe.
// Lifetime: every PooledMessage must be destroyed before its pool. Full
// protobuf messages only (reflection is needed), not MessageLite.
#ifndef ARENARPC_MESSAGE_POOL_H_
#define ARENARPC_MESSAGE_POOL_H_

#include <google/protobuf/message.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "arenarpc/internal/striped_counter.h"

namespace arenarpc {

struct MessagePoolOptions {
  size_t idle_per_thread = 4;  // instances cached per thread
  size_t idle_max = 256;       // instances kept process-wide beyond those
  // Growth guard, in serialized bytes of the largest content an instance
  // has held.
  size_t hard_cap_bytes = size_t{1} << 20;
  double percentile = 0.9;
  double slack = 2.0;
  size_t min_bound_bytes = 16 << 10;  // below this, never evict
  // Instances above the bound kept for large inputs, in content bytes.
  size_t large_reserve_bytes = size_t{32} << 20;
};

struct MessagePoolStats {
  uint64_t acquisitions = 0;
  uint64_t reuse_hits = 0;       // served by an existing instance
  uint64_t created = 0;          // instances built (misses)
  uint64_t evicted_by_guard = 0; // destroyed on return: grew past the bound
  uint64_t large_kept = 0;       // instances in the large reserve now
  uint64_t large_reused = 0;     // ParseFrom() inputs served by the reserve
  uint64_t dropped_idle = 0;     // destroyed: idle bound reached
  uint64_t in_use = 0;           // handles alive
  uint64_t idle = 0;             // instances kept for reuse
  uint64_t bound_bytes = 0;      // the growth guard's current bound
  // Estimate: sum over idle instances of the largest content each held.
  uint64_t retained_bytes_estimate = 0;
};

namespace internal {

// The type-independent engine behind MessagePool<T>.
class MessagePoolCore {
 public:
  struct Entry;
  struct Plan;  // which sub-messages to detach, per type
  MessagePoolCore(const google::protobuf::Message* prototype,
                  const MessagePoolOptions& options);
  ~MessagePoolCore();
  MessagePoolCore(const MessagePoolCore&) = delete;
  MessagePoolCore& operator=(const MessagePoolCore&) = delete;

  Entry* Acquire();
  void Return(Entry* entry, size_t size_hint);
  // Parses into *entry; may first exchange *entry for a reserved large one.
  bool Parse(Entry** entry, std::string_view wire);
  static google::protobuf::Message* MessageOf(Entry* entry);
  MessagePoolStats Stats() const;

 private:
  class Cache;
  friend class Cache;
  size_t Bound();
  void Observe(size_t size);
  Entry* TakeLarge(size_t size);  // from the reserve, or nullptr

  const MessagePoolOptions options_;
  const google::protobuf::Message* const prototype_;
  std::unique_ptr<Plan> plan_;  // detachable fields, per type
  std::unique_ptr<Cache> cache_;

  // Recent sizes (one return in kSampleEvery per thread): counts per
  // power-of-two bucket, halved every 1024 samples (so the bound follows a
  // shift of the traffic within a few thousand returns).
  static constexpr uint32_t kSampleEvery = 4;
  static constexpr int kBuckets = 40;
  std::atomic<uint32_t> histogram_[kBuckets] = {};
  std::atomic<uint32_t> samples_{0};
  std::atomic<size_t> bound_;

  // Updated on every Acquire/return by all threads: striped, not shared.
  StripedCounter in_use_;
  StripedCounter retained_;
  std::atomic<uint64_t> created_{0};
  std::atomic<uint64_t> evicted_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> large_reused_{0};

  mutable std::mutex large_mu_;
  std::vector<Entry*> large_;  // the reserve, guarded by large_mu_
  size_t large_bytes_ = 0;     // sum of their peaks, guarded by large_mu_
};

}  // namespace internal

template <class T>
class MessagePool;

// A message on loan from a MessagePool; returns it when destroyed. Move-only,
// like std::unique_ptr<T>.
template <class T>
class PooledMessage {
 public:
  PooledMessage() = default;
  PooledMessage(PooledMessage&& other) noexcept
      : core_(std::exchange(other.core_, nullptr)),
        entry_(std::exchange(other.entry_, nullptr)),
        message_(std::exchange(other.message_, nullptr)),
        size_hint_(other.size_hint_) {}
  PooledMessage& operator=(PooledMessage&& other) noexcept {
    if (this != &other) {
      reset();
      core_ = std::exchange(other.core_, nullptr);
      entry_ = std::exchange(other.entry_, nullptr);
      message_ = std::exchange(other.message_, nullptr);
      size_hint_ = other.size_hint_;
    }
    return *this;
  }
  ~PooledMessage() { reset(); }

  T* get() const { return message_; }
  T* operator->() const { return message_; }
  T& operator*() const { return *message_; }
  explicit operator bool() const { return message_ != nullptr; }

  // Parses `wire` into the (empty) message, reusing kept subtrees. A large
  // input may swap in a larger pooled instance: take get() after this
  // call. On failure returns false and leaves the message empty.
  bool ParseFrom(std::string_view wire) {
    size_hint_ = wire.size();
    const bool ok = core_->Parse(&entry_, wire);
    message_ = static_cast<T*>(internal::MessagePoolCore::MessageOf(entry_));
    return ok;
  }
  // The message's content size in serialized bytes, if the caller knows it
  // (saves the pool a ByteSizeLong() walk on return).
  void set_size_hint(size_t bytes) { size_hint_ = bytes; }

  // Returns the message to its pool now.
  void reset() {
    if (entry_ != nullptr) core_->Return(entry_, size_hint_);
    core_ = nullptr;
    entry_ = nullptr;
    message_ = nullptr;
    size_hint_ = 0;
  }

 private:
  friend class MessagePool<T>;
  PooledMessage(internal::MessagePoolCore* core,
                internal::MessagePoolCore::Entry* entry)
      : core_(core),
        entry_(entry),
        message_(static_cast<T*>(internal::MessagePoolCore::MessageOf(entry))) {}

  internal::MessagePoolCore* core_ = nullptr;
  internal::MessagePoolCore::Entry* entry_ = nullptr;
  T* message_ = nullptr;
  size_t size_hint_ = 0;
};

// A pool of reusable T. For T = google::protobuf::Message pass a prototype
// (e.g. from a DynamicMessageFactory); it must outlive the pool.
template <class T>
class MessagePool {
  static_assert(std::is_base_of_v<google::protobuf::Message, T>,
                "MessagePool needs full (non-lite) protobuf messages");

 public:
  explicit MessagePool(const MessagePoolOptions& options = {})
    requires(!std::is_same_v<T, google::protobuf::Message>)
      : core_(&T::default_instance(), options) {}
  explicit MessagePool(const T* prototype, const MessagePoolOptions& options = {})
      : core_(prototype, options) {}

  PooledMessage<T> Acquire() { return PooledMessage<T>(&core_, core_.Acquire()); }
  MessagePoolStats Stats() const { return core_.Stats(); }

 private:
  internal::MessagePoolCore core_;
};

}  // namespace arenarpc

#endif  // ARENARPC_MESSAGE_POOL_H_
