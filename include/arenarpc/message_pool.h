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
// Reuse keeps what protobuf's Clear() keeps. Prefer ParseFrom() to
// protobuf's ParseFromString(): it sees the size first. Lossy types, the
// growth bound, rebuilds and idle instances: docs/DESIGN.md ("Reuse:
// MessagePool<T>").
//
// Out of memory: std::bad_alloc only when the heap fails too; an instance
// whose use an exception interrupted is destroyed, never reused.
//
// Thread safety: Acquire() and returns may run concurrently on any threads
// (also on another than the one that acquired); a PooledMessage is not.
// Lifetime: every PooledMessage must be destroyed before its pool; do not
// keep pointers into the message after its handle is gone.
//
// Misuse (a pool destroyed while PooledMessages live, an empty handle used,
// a message used after its return) is undefined in release builds; debug
// and ASan builds catch it (docs/DESIGN.md, "Misuse").
#ifndef ARENARPC_MESSAGE_POOL_H_
#define ARENARPC_MESSAGE_POOL_H_

#include <google/protobuf/message.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "arenarpc/internal/check.h"
#include "arenarpc/internal/striped_counter.h"

namespace arenarpc {

struct MessagePoolOptions {
  size_t idle_per_thread = 4;     // instances cached per thread
  size_t idle_max = 256;          // instances kept process-wide beyond those
  uint32_t idle_decay_ms = 1000;  // idle this long: destroyed (0: never)
  // Growth bound, in serialized bytes: min(hard_cap_bytes, max(
  // min_bound_bytes, slack x the `percentile` of recent content sizes)).
  size_t hard_cap_bytes = size_t{8} << 20;
  double percentile = 0.9;
  double slack = 2.0;
  size_t min_bound_bytes = 16 << 10;
  // Abandoned arena bytes allowed, as a multiple of the footprint.
  double max_garbage_ratio = 1.0;
  uint32_t rebuild_every = 64;     // uses before a rebuild (0: never)
  uint32_t sample_every = 16;      // returns measured (at random) when unsized
  bool reuse_lossy_types = false;  // Clear() and reuse even lossy types
  bool arena_instances = false;    // arena instances also on protobuf v24+
  // Heap instances: ParseFrom() puts an input above the bound on an arena.
  bool large_inputs_on_arena = true;
  // Heap instances: fresh-arena returns after content above the bound came
  // in other than by ParseFrom(), and at the pool's start (0: none).
  int64_t unrouted_fresh_returns = int64_t{1} << 16;
  int64_t fresh_returns_at_start = 1024;
};

struct MessagePoolStats {
  uint64_t acquisitions = 0;
  uint64_t reuse_hits = 0;        // served by an existing instance
  uint64_t created = 0;           // instances built (misses and rebuilds)
  uint64_t evicted_by_guard = 0;  // rebuilt: held content above the bound
  uint64_t rebuilt_garbage = 0;   // rebuilt: abandoned bytes over the limit
  uint64_t rebuilt_aged = 0;      // rebuilt: rebuild_every uses
  uint64_t rebuilt_after_exception = 0;  // destroyed: use interrupted
  uint64_t fresh_arena_returns = 0;      // arena reset instead of Clear()
  uint64_t large_on_arena = 0;  // ParseFrom() inputs put on a fresh arena
  // Heap instances that held content above the bound not parsed by
  // ParseFrom(); each turns heap instances off for a while.
  uint64_t unrouted_large = 0;
  bool fresh_arenas_now = false;  // Acquire() serves fresh arenas now
  uint64_t dropped_idle = 0;      // idle instances destroyed
  uint64_t in_use = 0;            // handles alive (at 0 the pool may go)
  uint64_t idle = 0;              // instances kept for reuse
  uint64_t bound_bytes = 0;       // the growth bound
  uint64_t retained_bytes = 0;    // bytes of the idle instances
  uint64_t kept_percent = 100;    // % of arena bytes a use did not allocate
};

namespace internal {

class SizeGuard;

// The type-independent engine behind MessagePool<T>.
class MessagePoolCore {
 public:
  struct Entry;
  // object_size: sizeof the message type (0 for a dynamic prototype); that
  // many bytes of an idle instance are poisoned under ASan.
  MessagePoolCore(const google::protobuf::Message* prototype,
                  const MessagePoolOptions& options, size_t object_size = 0);
  ~MessagePoolCore();
  MessagePoolCore(const MessagePoolCore&) = delete;
  MessagePoolCore& operator=(const MessagePoolCore&) = delete;

  Entry* Acquire();
  // size_hint: content size in serialized bytes if known, else 0;
  // kInterrupted: an exception interrupted the use (destroy, never reuse).
  static constexpr size_t kInterrupted = ~size_t{0};
  void Return(Entry* entry, size_t size_hint);
  static google::protobuf::Message* MessageOf(Entry* entry);
  static bool NewInstance(const Entry* entry);
  // The message ParseFrom() parses `wire_size` bytes into: the instance,
  // or a message on a fresh arena for a large input into a heap instance.
  google::protobuf::Message* ParseTarget(Entry* entry, size_t wire_size);
  MessagePoolStats Stats() const;
  void Trim();
  size_t ReleaseIdleCaches(std::chrono::milliseconds idle_for);
  const std::string& reuse_limit() const { return reuse_limit_; }

 private:
  class Cache;  // a member: it reaches the counters
  bool ServingFreshArenas() const {
    return fresh_arenas_ ||
           (heap_instances_ &&
            fresh_returns_left_.load(std::memory_order_relaxed) > 0);
  }
  void FreshReturn(Entry* entry, size_t size_hint);
  void ReturnKept(Entry* entry, size_t size_hint);
  void ApplyGuards(Entry* entry, size_t size);
  void TurnHeapInstancesOff();

  const MessagePoolOptions options_;
  const google::protobuf::Message* const prototype_;
  const size_t object_size_;
  const std::string reuse_limit_;  // "" if Clear() keeps every field
  const bool fresh_arenas_;        // reset the arena instead of Clear()
  // Instances on the heap (protobuf v24+: kArenaParseRecreatesStrings).
  const bool heap_instances_;
  std::unique_ptr<Cache> cache_;
  std::unique_ptr<SizeGuard> guard_;  // the growth bound

  // Updated on every Acquire/return by all threads: striped, not shared.
  // kept_bytes_: footprint bytes a use did not allocate; regrown_bytes_:
  // arena bytes a use allocated again; large_: large_on_arena.
  StripedCounter in_use_, retained_, kept_bytes_, regrown_bytes_, created_,
      fresh_, large_;
  std::atomic<uint64_t> evicted_{0}, garbage_{0}, aged_{0}, interrupted_{0},
      dropped_{0}, unrouted_large_{0};
  // Heap instances off while > 0 (fresh arenas instead); counts returns.
  std::atomic<int64_t> fresh_returns_left_{0};
};

// Removes a destroyed pool from the stats registry (src/metrics.cc); cheap
// when no pool was ever registered.
void NotifyMessagePoolDestroyed(const void* pool);

// Tests and benchmarks: later pools use heap instances as on v24+.
void SetHeapInstancesForTest(bool on);

// MessagePool::ReuseLimit() of `type`, the path with the reason ("a.b: ...").
std::string ReuseLimit(const google::protobuf::Descriptor* type);

}  // namespace internal

// A message on loan from a MessagePool; returns it when destroyed. Move-only,
// like std::unique_ptr<T>.
template <class T>
class PooledMessage {
  using Core = internal::MessagePoolCore;

 public:
  PooledMessage() = default;
  PooledMessage(PooledMessage&& other) noexcept { *this = std::move(other); }
  PooledMessage& operator=(PooledMessage&& other) noexcept {
    if (this != &other) {
      reset();
      loan_ = std::exchange(other.loan_, {});
    }
    return *this;
  }
  ~PooledMessage() {
    // Unwinding: the exception may have left the message half-modified.
    if (loan_.entry != nullptr && std::uncaught_exceptions() != 0) {
      loan_.size_hint = Core::kInterrupted;
    }
    reset();
  }

  T* get() const { return loan_.message; }
  T* operator->() const {
    ARENARPC_DCHECK(loan_.message != nullptr,
                    "PooledMessage: use of an empty handle (returned, moved "
                    "from or default-constructed)");
    return loan_.message;
  }
  T& operator*() const { return *operator->(); }
  explicit operator bool() const { return loan_.message != nullptr; }

  // True if the pool built this instance for this use (its warming: kAuto
  // leaves such uses out); false for a reused or rebuilt instance, a fresh
  // arena or an empty handle.
  bool new_instance() const {
    return loan_.entry != nullptr && Core::NewInstance(loan_.entry);
  }

  // Parses `wire` into the message (replacing its content). On failure
  // returns false and leaves the message empty. A large input may go into
  // another message: take pointers from the handle after ParseFrom().
  bool ParseFrom(std::string_view wire) {
    operator->();  // checks the handle
    // Stays kInterrupted if the parse throws (std::bad_alloc).
    loan_.size_hint = Core::kInterrupted;
    T* m = static_cast<T*>(loan_.core->ParseTarget(loan_.entry, wire.size()));
    loan_.message = m;
    const bool ok =
        m->ParseFromArray(wire.data(), static_cast<int>(wire.size()));
    loan_.size_hint = wire.size();
    if (!ok) m->Clear();
    return ok;
  }
  // The content size in serialized bytes, if the caller knows it (saves
  // the pool a ByteSizeLong() walk on a sampled return).
  void set_size_hint(size_t bytes) { loan_.size_hint = bytes; }

  // Returns the message to its pool now.
  void reset() {
    if (loan_.entry != nullptr)
      loan_.core->Return(loan_.entry, loan_.size_hint);
    loan_ = {};
  }

 private:
  template <class U>
  friend class MessagePool;
  PooledMessage(Core* core, Core::Entry* entry)
      : loan_{core, entry, static_cast<T*>(Core::MessageOf(entry))} {}

  struct Loan {
    Core* core = nullptr;
    Core::Entry* entry = nullptr;
    T* message = nullptr;
    size_t size_hint = 0;
  } loan_;
};

// A pool of reusable T. For T = google::protobuf::Message pass a prototype
// (e.g. from a DynamicMessageFactory); it must outlive the pool.
template <class T>
class MessagePool {
  static_assert(std::is_base_of_v<google::protobuf::Message, T>,
                "MessagePool needs full (non-lite) protobuf messages");

 public:
  explicit MessagePool(const MessagePoolOptions& options = {}) requires(
      !std::is_same_v<T, google::protobuf::Message>)
      : core_(&T::default_instance(), options, sizeof(T)) {}
  explicit MessagePool(const T* prototype,
                       const MessagePoolOptions& options = {})
      : core_(prototype, options,
              std::is_same_v<T, google::protobuf::Message> ? 0 : sizeof(T)) {}
  ~MessagePool() { internal::NotifyMessagePoolDestroyed(this); }
  MessagePool(const MessagePool&) = delete;
  MessagePool& operator=(const MessagePool&) = delete;

  PooledMessage<T> Acquire() {
    return PooledMessage<T>(&core_, core_.Acquire());
  }
  MessagePoolStats Stats() const { return core_.Stats(); }
  // Destroys the idle instances of the shared depot; thread caches stay.
  void Trim() { core_.Trim(); }
  // Destroys the instances of thread caches unused for `idle_for` (as
  // PagePool::ReleaseIdleCaches); returns how many.
  size_t ReleaseIdleCaches(std::chrono::milliseconds idle_for) {
    return core_.ReleaseIdleCaches(idle_for);
  }
  // Why reuse cannot keep all of T on this protobuf version ("" if it
  // can): the first field whose content Clear() drops, as a path.
  const std::string& ReuseLimit() const { return core_.reuse_limit(); }

 private:
  internal::MessagePoolCore core_;
};

}  // namespace arenarpc

#endif  // ARENARPC_MESSAGE_POOL_H_
