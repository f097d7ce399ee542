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
//   // Protobuf's own calls work too (req->ParseFromString(wire)), but
//   // the pool then sees the input's size only after the parse: prefer
//   // ParseFrom() where inputs vary in size ("Parsed by other means").
//   // Generic/dynamic services: a pool from a prototype.
//   arenarpc::MessagePool<google::protobuf::Message> any(&prototype);
//
// Each pooled instance lives on an arena of its own (pooled pages); on
// protobuf v24+ an instance of a type Clear() keeps whole lives on the heap
// instead (there, parsing into an arena message gives each singular string
// a new std::string every time; into a heap message it reuses the buffer).
// Reuse keeps what protobuf keeps on Clear(): the elements and capacity of
// repeated fields, string buffers, sub-messages with a has-bit. Some types
// Clear() cannot keep whole (on protobuf 3.21: proto3 singular message
// fields without has-bit, oneof members, map entries; ReuseLimit() names the
// first): on the real services of bench/corpus, clearing such a message
// and parsing into it again took 1.5-1.9x a fresh arena's time in-process
// (5.2x on HoraeDB; docs/MODES.md, kept output
// docs/raw/corpus/inprocess.md), since Clear() walks the message and the
// dropped parts are allocated again anyway. So by default a
// pool of such a type does not Clear(): each use gets a fresh arena (the
// instance's arena is reset on return), which is exactly arena mode.
// `reuse_lossy_types` turns Clear()-and-reuse on for them anyway; what
// Clear() drops is then abandoned on the instance's arena (an arena
// allocation on the next use, not a malloc/free pair), bounded below.
//
// Guards, checked on every return without walking the message:
//  - abandoned bytes: an instance whose arena grew beyond
//    (1 + max_garbage_ratio) x its footprint after its first use is rebuilt
//    (its arena is reset: a fresh instance next time);
//  - growth guard: the content size (serialized bytes) is taken when it is
//    free (the ParseFrom() input, a size hint, the cached size left by
//    serialization) and on a random 1 in `sample_every` returns otherwise
//    (one ByteSizeLong() walk); an instance that held content above
//    min(hard_cap_bytes, slack x the `percentile` of recent sizes) is
//    rebuilt, so small inputs never carry large capacity;
//  - age: an instance is rebuilt after `rebuild_every` uses, so capacity no
//    guard saw (string buffers live on the heap, outside the arena) is held
//    for a bounded number of uses;
//  - idle bound: at most idle_per_thread instances per thread plus idle_max
//    process-wide; the rest are destroyed;
//  - decay: idle instances no use reached for idle_decay_ms (1 s) are
//    destroyed within a period or two (shared ones; a thread's cache when
//    the thread took or returned none for a period), checked on returns,
//    so the pool holds about what the last second's calls in flight
//    needed, not the most a burst ever did (a fresh server's first
//    seconds, a stall, a spike: on sync gRPC each call in flight is a
//    thread, each with instances of its own).
//
// Large inputs (heap instances, protobuf v24+): PooledMessage::ParseFrom()
// parses an input above the growth guard's bound (one the guard would evict
// the instance for) into a message on a fresh arena of pooled pages instead
// of the heap instance, and the handle then points to that message; on
// return the arena is reset and the heap instance, untouched, is reused.
// Parsed into the heap instance, such an input costs a malloc per object
// beyond the instance's capacity and a free per object when the evicted
// instance is destroyed: on 99 % ~8 KB / 1 % ~1.7 MB requests on protobuf
// 35.1 that made reuse slower than a fresh arena per use
// (docs/PROTOBUF_VERSIONS.md).
//
// Parsed by other means (protobuf's own ParseFromString on *handle, gRPC's
// deserializer into an allocator's message, the caller's writes), an input
// goes into the heap instance whatever its size: above the bound, that is
// the malloc per object and the free per object above. The pool sees it on
// return (the content size, when known, sampled, or on the pool's first
// 1024 returns measured), evicts the instance and, for the next
// unrouted_fresh_returns returns, serves fresh arenas instead of heap
// instances (arena mode; MessagePoolStats::unrouted_large,
// fresh_arenas_now), then tries heap instances again. A new pool starts
// that way (fresh_returns_at_start) and measures each return while its
// guard learns the sizes, so that such an input is seen before any heap
// instance took one. On the skewed sizes above parsed with
// ParseFromString on protobuf 35.1 (docs/raw/reuse_skew/unrouted/
// protobuf35/, CPU against a fresh arena per use): 2.75-2.80x without
// turning heap instances off, 1.03-1.07x when heap instances took the
// first large inputs (peak RSS 1.06-1.16x), 0.99-1.00x with the start on
// fresh arenas (peak RSS 1.00-1.01x; each use is then a fresh arena plus
// the pool's bookkeeping, 0.6 % of the profile); ParseFrom(): 0.92x.
// Clearing and reusing instances on arenas instead took 1.32-1.36x (35.1's
// parser re-creates their strings). Arena instances (before v24) need none
// of it.
//
// Out of memory: instances live on arenas, which take blocks from the heap
// when the page pool has none (arena.h), so Acquire() and parsing fail only
// when the heap fails too, with std::bad_alloc like protobuf's own calls;
// the pool stays consistent: a failed Acquire() hands nothing out, and an
// instance whose ParseFrom() threw, or whose handle is destroyed while an
// exception unwinds the stack, is destroyed on return, never reused
// (rebuilt_after_exception): protobuf gives no exception guarantee (33.6
// leaves a null element in a repeated field when an allocation throws,
// which a later Clear() would follow).
//
// Thread safety: Acquire() and returning handles may happen concurrently on
// any threads (per-thread caches; a handle may be returned on another
// thread). A PooledMessage itself is not thread-safe.
// Lifetime: every PooledMessage must be destroyed before its pool; the
// message and everything reached from it belong to the pool (do not keep
// pointers into it after the handle is gone). Full protobuf messages only
// (reflection is needed for dynamic prototypes), not MessageLite. A pool
// registered with the stats (RegisterMessagePoolStats, arenarpc/metrics.h)
// leaves them in its destructor.
//
// Misuse, by build (debug: ARENARPC_DEBUG_CHECKS, on unless NDEBUG):
//  - a pool destroyed while PooledMessages are alive: debug builds abort
//    ("MessagePool destroyed while PooledMessages are alive"); release
//    builds: undefined behaviour (the handles later return into freed
//    memory);
//  - using an empty handle (returned by reset(), moved from, default):
//    debug builds abort ("use of an empty handle"); release builds
//    dereference nullptr;
//  - using the message through a pointer kept after its handle returned
//    it: undefined behaviour. Under ASan the idle message object itself
//    (sizeof(T) bytes; not for a dynamic prototype) is poisoned, so a
//    touch is reported (use-after-poison); what it points to (strings,
//    repeated fields, sub-messages) is kept cleared for reuse and not
//    poisoned. An instance that goes back with its arena reset is on a
//    pooled arena's first page: poisoned while that arena is idle.
//  - returning twice or to another pool cannot be expressed: a handle
//    returns once (reset() empties it) and only to the pool it came from.
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
  size_t idle_per_thread = 4;  // instances cached per thread
  size_t idle_max = 256;       // instances kept process-wide beyond those
  // Decay: once this often, idle instances no Acquire() reached in the
  // whole period (shared ones below the lowest the shared depot went, and
  // those of threads that took or returned none) are destroyed, so what a
  // burst built goes back while calls go on. 0: off (the idle bound above,
  // Trim() and ReleaseIdleCaches() only).
  uint32_t idle_decay_ms = 1000;
  // Growth guard, in serialized bytes of the content an instance held.
  size_t hard_cap_bytes = size_t{8} << 20;
  // The percentile of recent content sizes (0..1) the bound follows; sizes
  // above it are the rare large inputs whose capacity is not kept.
  double percentile = 0.9;
  // Bound = slack x that percentile (its power-of-two bucket's top), so
  // ordinary variation above the percentile does not rebuild instances.
  double slack = 2.0;
  size_t min_bound_bytes = 16 << 10;  // below this, never rebuild for size
  // Arena bytes an instance may abandon (or grow by) past its footprint
  // after its first use, as a multiple of that footprint, before it is
  // rebuilt.
  double max_garbage_ratio = 1.0;
  // Uses after which an instance is rebuilt anyway (0: never).
  uint32_t rebuild_every = 64;
  // Returns measured with a ByteSizeLong() walk when no size is free: 1 in
  // this many, chosen at random (so alternating pools are sampled alike).
  uint32_t sample_every = 16;
  // Clear() and reuse instances even of a type Clear() cannot keep whole
  // (ReuseLimit() not empty). Off: such a pool gives each use a fresh arena.
  bool reuse_lossy_types = false;
  // Keep instances on arenas even where heap instances keep more (protobuf
  // v24+, see above); bench/corpus/corpus_bench.cc's reuse_arena mode
  // measures it.
  bool arena_instances = false;
  // Heap instances: ParseFrom() puts an input above the growth bound on a
  // fresh arena ("Large inputs" above). Off: into the instance, which the
  // guard then evicts (the behaviour before; reuse_skew_bench's pool_inplace
  // mode measures it).
  bool large_inputs_on_arena = true;
  // Heap instances: returns served on fresh arenas after an input above the
  // growth bound reached a heap instance other than through ParseFrom()
  // ("Parsed by other means" above); 0: never.
  int64_t unrouted_fresh_returns = int64_t{1} << 16;
  // Heap instances: the pool's first returns (about this many) are served
  // on fresh arenas, each measured while the growth guard learns the sizes
  // (its first 1024), so that an input above the growth bound
  // that reaches the pool other than through ParseFrom() turns heap
  // instances off before any heap instance took one ("Parsed by other
  // means" above); 0: heap instances from the first use.
  int64_t fresh_returns_at_start = 1024;
};

struct MessagePoolStats {
  uint64_t acquisitions = 0;
  uint64_t reuse_hits = 0;        // served by an existing instance
  uint64_t created = 0;           // instances built (misses and rebuilds)
  uint64_t evicted_by_guard = 0;  // rebuilt: held content above the bound
  uint64_t rebuilt_garbage = 0;   // rebuilt: abandoned bytes over the limit
  uint64_t rebuilt_aged = 0;      // rebuilt: rebuild_every uses
  // Destroyed on return: an exception interrupted its use (see "Out of
  // memory" above).
  uint64_t rebuilt_after_exception = 0;
  // Returns that reset the instance's arena instead of Clear(): the type is
  // one Clear() cannot keep whole (reuse_lossy_types off), or heap
  // instances are off for now (unrouted_large).
  uint64_t fresh_arena_returns = 0;
  // Uses whose ParseFrom() input was above the growth guard's bound, parsed
  // into a message on a fresh arena instead of the pool's heap instance
  // (see "Large inputs" above).
  uint64_t large_on_arena = 0;
  // Heap instances that held content above the growth bound put there by
  // other means than ParseFrom() (see "Parsed by other means" above); each
  // turns heap instances off for unrouted_fresh_returns returns.
  uint64_t unrouted_large = 0;
  // Whether Acquire() now serves fresh arenas (a type Clear() cannot keep
  // whole, or heap instances off after an unrouted large input).
  bool fresh_arenas_now = false;
  // Idle instances destroyed: the idle bound, decay, Trim(),
  // ReleaseIdleCaches().
  uint64_t dropped_idle = 0;
  // Handles alive, counting a return until it is done with the pool: at 0
  // (and no Acquire() running) the pool may be destroyed.
  uint64_t in_use = 0;
  uint64_t idle = 0;         // instances kept for reuse
  uint64_t bound_bytes = 0;  // the growth guard's current bound
  // Bytes of the idle instances: their arenas' blocks; a heap instance's
  // SpaceUsedLong() after its first use.
  uint64_t retained_bytes = 0;
  // Share of an instance's arena bytes a use did not have to allocate again
  // (percent; 100 when Clear() keeps everything). Low means the type's bulk
  // sits where protobuf's Clear() cannot keep it: reuse is then no better
  // than an arena (see ReuseLimit()).
  uint64_t kept_percent = 100;
};

namespace internal {

class SizeGuard;

// The type-independent engine behind MessagePool<T>.
class MessagePoolCore {
 public:
  struct Entry;
  // object_size: sizeof the message type if known (0 for a dynamic
  // prototype); that many bytes of an idle instance are poisoned under ASan.
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
  // Whether this use is a new instance's first (see
  // PooledMessage::new_instance()).
  static bool NewInstance(const Entry* entry);
  // The message ParseFrom() parses `wire_size` bytes into: the instance, or,
  // for a heap instance and an input above the growth bound, a new message
  // on a fresh arena, which the entry holds until it is returned.
  google::protobuf::Message* ParseTarget(Entry* entry, size_t wire_size);
  MessagePoolStats Stats() const;
  void Trim();
  size_t ReleaseIdleCaches(std::chrono::milliseconds idle_for);
  const std::string& reuse_limit() const { return reuse_limit_; }

 private:
  class Cache;
  friend class Cache;
  Entry* NewEntry();
  void Rebuild(Entry* entry);
  bool ServingFreshArenas() const;
  void CountFreshReturn();
  void LearnFromFreshReturn(Entry* entry, size_t size_hint);
  void ReturnKept(Entry* entry, size_t size_hint);
  void ApplyGuards(Entry* entry, size_t size);
  void TurnHeapInstancesOff();

  const MessagePoolOptions options_;
  const google::protobuf::Message* const prototype_;
  const size_t object_size_;
  const std::string reuse_limit_;  // "" if Clear() keeps every field
  const bool fresh_arenas_;        // reset the arena instead of Clear()
  // Instances on the heap, not on arenas: where parsing into an arena
  // message re-creates its strings (protobuf v24+, internal/protobuf_compat.h)
  // and Clear() keeps the whole type, a heap instance keeps every buffer.
  const bool heap_instances_;
  std::unique_ptr<Cache> cache_;

  std::unique_ptr<SizeGuard> guard_;  // the growth guard

  // Updated on every Acquire/return by all threads: striped, not shared.
  StripedCounter in_use_;
  StripedCounter retained_;
  StripedCounter kept_bytes_;     // footprint bytes a use did not allocate
  StripedCounter regrown_bytes_;  // arena bytes a use allocated again
  StripedCounter created_;
  std::atomic<uint64_t> evicted_{0};
  std::atomic<uint64_t> garbage_{0};
  std::atomic<uint64_t> aged_{0};
  std::atomic<uint64_t> interrupted_{0};
  std::atomic<uint64_t> dropped_{0};
  StripedCounter fresh_;
  StripedCounter large_;  // large_on_arena
  std::atomic<uint64_t> unrouted_large_{0};
  // Heap instances off while > 0 (fresh arenas instead); counts returns.
  std::atomic<int64_t> fresh_returns_left_{0};
};

// Registries that keep pointers to pools (src/metrics.cc) set a hook that a
// MessagePool's destructor calls with its address, before anything of the
// pool is destroyed. One hook process-wide; nullptr removes it.
void SetMessagePoolDestroyedHook(void (*hook)(const void* pool));
void NotifyMessagePoolDestroyed(const void* pool);

// Tests and benchmarks only: pools constructed while on put their instances
// on the heap on every protobuf version, as they do on v24+ (where the
// choice matters: see the top of this file), so that the heap-instance
// paths run on 3.21 too.
void SetHeapInstancesForTest(bool on);

// Why Clear() cannot keep all of `type` on this protobuf (first such field
// as a path, e.g. "spans.attributes.value: proto3 message field without
// has-bit"), or "" if it keeps everything.
std::string ReuseLimit(const google::protobuf::Descriptor* type);

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
        size_hint_(std::exchange(other.size_hint_, 0)) {}
  PooledMessage& operator=(PooledMessage&& other) noexcept {
    if (this != &other) {
      reset();
      core_ = std::exchange(other.core_, nullptr);
      entry_ = std::exchange(other.entry_, nullptr);
      message_ = std::exchange(other.message_, nullptr);
      size_hint_ = std::exchange(other.size_hint_, 0);
    }
    return *this;
  }
  ~PooledMessage() {
    // Destroyed by stack unwinding: the exception may have left the message
    // half-modified (see the pool's "Out of memory" note).
    if (entry_ != nullptr && std::uncaught_exceptions() != 0) {
      size_hint_ = internal::MessagePoolCore::kInterrupted;
    }
    reset();
  }

  T* get() const { return message_; }
  T* operator->() const {
    ARENARPC_DCHECK(message_ != nullptr,
                    "PooledMessage: use of an empty handle (returned, moved "
                    "from or default-constructed)");
    return message_;
  }
  T& operator*() const { return *operator->(); }
  explicit operator bool() const { return message_ != nullptr; }

  // True if the pool built this message for this use: it had no idle
  // instance, so nothing is kept from an earlier use and this one costs
  // what a fresh arena does. False when the handle is empty, for an
  // instance used before (also one rebuilt after the growth guard or
  // ageing dropped its content: that cost recurs) and for a pool that
  // serves fresh arenas (every use is one). kAuto leaves such calls out
  // of what it learns of reuse: they measure the pool's warming, not its
  // steady state.
  bool new_instance() const {
    return entry_ != nullptr && internal::MessagePoolCore::NewInstance(entry_);
  }

  // Parses `wire` into the message (replacing its content). On failure
  // returns false and leaves the message empty. Out of memory: see the
  // pool's "Out of memory" note. An input above the growth bound may be
  // parsed into another message (see "Large inputs" above): take pointers
  // from the handle after ParseFrom(), not before.
  bool ParseFrom(std::string_view wire) {
    ARENARPC_DCHECK(message_ != nullptr,
                    "PooledMessage: use of an empty handle (returned, moved "
                    "from or default-constructed)");
    // Stays kInterrupted if the parse throws (std::bad_alloc).
    size_hint_ = internal::MessagePoolCore::kInterrupted;
    message_ = static_cast<T*>(core_->ParseTarget(entry_, wire.size()));
    const bool ok =
        message_->ParseFromArray(wire.data(), static_cast<int>(wire.size()));
    size_hint_ = wire.size();
    if (!ok) message_->Clear();
    return ok;
  }
  // The message's content size in serialized bytes, if the caller knows it
  // (saves the pool a ByteSizeLong() walk on a sampled return).
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
        message_(static_cast<T*>(internal::MessagePoolCore::MessageOf(entry))) {
  }

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
  // Destroys the idle instances in the shared depot (up to idle_max of
  // them), keeping those cached by threads (idle_per_thread each): after a
  // burst, what the burst sized goes back. The gRPC adapters' idle trimming
  // calls it on the shared pools.
  void Trim() { core_.Trim(); }
  // Destroys the instances cached by threads that have not acquired or
  // returned any for `idle_for` (observed across calls, as
  // PagePool::ReleaseIdleCaches; zero: every thread not in the pool at this
  // instant), so that the threads of a past burst do not keep theirs
  // forever. Returns how many were destroyed. The threads keep working: a
  // cache refills on its next Acquire(). The gRPC adapters' idle trimming
  // and pooled-memory cap call it on the shared pools.
  size_t ReleaseIdleCaches(std::chrono::milliseconds idle_for) {
    return core_.ReleaseIdleCaches(idle_for);
  }
  // Why reuse cannot keep all of T on this protobuf version ("" if it
  // can): the first field whose content Clear() drops, as a path. Unless
  // reuse_lossy_types is set, a pool of such a type serves fresh arenas.
  const std::string& ReuseLimit() const { return core_.reuse_limit(); }

 private:
  internal::MessagePoolCore core_;
};

}  // namespace arenarpc

#endif  // ARENARPC_MESSAGE_POOL_H_
