#include "arenarpc/message_pool.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <utility>

#include "arenarpc/arena.h"
#include "arenarpc/internal/check.h"
#include "arenarpc/internal/protobuf_compat.h"
#include "src/internal/pointer_cache.h"
#include "src/internal/size_guard.h"

namespace arenarpc::internal {

using google::protobuf::Message;

// An instance: a message on an arena of its own, or on the heap (see
// heap_instances_). Built lazily, so an idle instance that was rebuilt holds
// nothing until it is used again.
struct MessagePoolCore::Entry {
  // The instance's arena; for a heap instance, the arena of this use's
  // large-input message (`large`), if any.
  std::optional<ScopedArena> arena;
  Message* message = nullptr;  // on *arena, or the heap
  // This use's message, on `arena`, when ParseFrom() got an input above the
  // growth bound into a heap instance (see ParseTarget); else nullptr.
  Message* large = nullptr;
  uint64_t footprint = 0;     // bytes after the first use
  uint64_t space = 0;         // bytes at the last return
  size_t peak = 0;            // largest content measured since built
  uint32_t uses = 0;          // since built
  bool built = false;         // an instance kept between uses, ever
  bool new_instance = false;  // this use is that first build's
  size_t poisoned = 0;        // bytes of *message poisoned while idle (ASan)
  // This use went through ParseTarget() (PooledMessage::ParseFrom()): an
  // input above the bound could not reach a heap instance.
  bool routed = false;

  ~Entry() { Clear(); }
  // Idle: nothing of the pool touches the message until it is handed out
  // again, so its own bytes can be poisoned. What it points to (strings,
  // repeated fields, sub-messages) stays as Clear() left it: reuse needs it.
  void Poison(size_t n) {
    if (message == nullptr || n == 0) return;
    ARENARPC_POISON(message, n);
    poisoned = n;
  }
  void Unpoison() {
    if (poisoned != 0) ARENARPC_UNPOISON(message, poisoned);
    poisoned = 0;
  }
  void Clear() {
    Unpoison();
    if (message != nullptr && message->GetArena() == nullptr) delete message;
    message = nullptr;
    large = nullptr;  // on the arena, destroyed with it
    arena.reset();    // runs the arena's destructors, pages back to the pool
    footprint = space = 0;
    peak = 0;
    uses = 0;
    routed = false;
  }
};

namespace {

// A per-thread generator: sampling at random (not every n-th return of a
// thread) stays fair when several pools alternate on one thread.
uint32_t NextRandom() {
  static thread_local constinit uint64_t state = 0;
  if (state == 0) {
    state = reinterpret_cast<uintptr_t>(&state) * 0x9E3779B97F4A7C15ull | 1;
  }
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return static_cast<uint32_t>(state >> 32);
}

bool OneIn(uint32_t n) { return n <= 1 || NextRandom() % n == 0; }

}  // namespace

class MessagePoolCore::Cache final : public PointerCache {
 public:
  Cache(MessagePoolCore* core, const MessagePoolOptions& o)
      : PointerCache(o.idle_per_thread, o.idle_max,
                     std::chrono::milliseconds(o.idle_decay_ms)),
        core_(core) {}
  ~Cache() override { Shutdown(); }

 protected:
  size_t Make(void** out, size_t n) override {
    (void)n;  // one at a time: idle instances cost memory
    out[0] = new Entry;
    return 1;
  }
  void Destroy(void* const* items, size_t n) override {
    for (size_t i = 0; i < n; ++i) {
      auto* e = static_cast<Entry*>(items[i]);
      core_->retained_.Add(-static_cast<int64_t>(e->space));
      core_->dropped_.fetch_add(1, std::memory_order_relaxed);
      delete e;
    }
  }

 private:
  MessagePoolCore* const core_;
};

namespace {
std::atomic<void (*)(const void*)> pool_destroyed_hook{nullptr};
std::atomic<bool> heap_instances_for_test{false};
}  // namespace

void SetHeapInstancesForTest(bool on) {
  heap_instances_for_test.store(on, std::memory_order_relaxed);
}

void SetMessagePoolDestroyedHook(void (*hook)(const void* pool)) {
  pool_destroyed_hook.store(hook, std::memory_order_release);
}

void NotifyMessagePoolDestroyed(const void* pool) {
  if (auto* hook = pool_destroyed_hook.load(std::memory_order_acquire)) {
    hook(pool);
  }
}

MessagePoolCore::MessagePoolCore(const Message* prototype,
                                 const MessagePoolOptions& options,
                                 size_t object_size)
    : options_(options),
      prototype_(prototype),
      object_size_(object_size),
      reuse_limit_(prototype != nullptr ? ReuseLimit(prototype->GetDescriptor())
                                        : std::string()),
      fresh_arenas_(!reuse_limit_.empty() && !options.reuse_lossy_types),
      heap_instances_(
          (kArenaParseRecreatesStrings ||
           heap_instances_for_test.load(std::memory_order_relaxed)) &&
          reuse_limit_.empty() && !options.arena_instances),
      guard_(std::make_unique<SizeGuard>(options)) {
  ARENARPC_CHECK(prototype != nullptr, "MessagePool: null prototype");
  cache_ = std::make_unique<Cache>(this, options);
  // A young heap-instance pool serves fresh arenas while it learns the
  // sizes (see the fresh returns in Return()).
  if (heap_instances_) {
    fresh_returns_left_.store(
        std::max<int64_t>(0, options.fresh_returns_at_start),
        std::memory_order_relaxed);
  }
}

MessagePoolCore::~MessagePoolCore() {
  ARENARPC_DCHECK(in_use_.Sum() == 0,
                  "MessagePool destroyed while PooledMessages are alive");
  cache_.reset();
}

Message* MessagePoolCore::MessageOf(Entry* entry) {
  return entry->large != nullptr ? entry->large : entry->message;
}

bool MessagePoolCore::NewInstance(const Entry* entry) {
  return entry->new_instance;
}

Message* MessagePoolCore::ParseTarget(Entry* e, size_t wire_size) {
  e->routed = true;
  // Only a heap instance: an arena instance takes a large input on its own
  // arena (bump allocation, reset on eviction) already.
  if (!heap_instances_ || !options_.large_inputs_on_arena ||
      e->large != nullptr || e->arena.has_value() ||
      wire_size <= guard_->Bound()) {
    return MessageOf(e);
  }
  // A heap instance would malloc every element the input has beyond its
  // capacity, then be destroyed on return (the guard evicts what held
  // content above the bound): one malloc and one free per object of the
  // largest inputs. A fresh arena takes them in bulk, as arena mode does;
  // the heap instance stays as it was for the next use.
  e->message->Clear();  // ParseFrom() replaces the content: drop any writes
  e->arena.emplace();
  e->large = prototype_->New(e->arena->arena());
  large_.Add(1);
  return e->large;
}

namespace {
constexpr uint32_t kYoungReturns = 1024;
}  // namespace

bool MessagePoolCore::ServingFreshArenas() const {
  return fresh_arenas_ ||
         (heap_instances_ &&
          fresh_returns_left_.load(std::memory_order_relaxed) > 0);
}

MessagePoolCore::Entry* MessagePoolCore::Acquire() {
  auto* e = static_cast<Entry*>(cache_->Pop());
  ARENARPC_CHECK(e != nullptr, "MessagePool: out of memory");
  // A heap instance while heap instances are off (see Return()): it goes,
  // this use gets a fresh arena.
  if (e->message != nullptr && !e->arena.has_value() && ServingFreshArenas()) {
    e->Unpoison();
    retained_.Add(-static_cast<int64_t>(e->space));
    e->Clear();
  }
  e->new_instance = false;
  if (e->message == nullptr) {
    // Read once: other threads turn fresh arenas on and off.
    const bool fresh = ServingFreshArenas();
    // An entry's first instance kept between uses (the pool grew); not a
    // rebuild, whose cost recurs in steady state, nor a fresh arena.
    e->new_instance = !fresh && !e->built;
    e->built = e->built || !fresh;
    try {
      if (heap_instances_ && !fresh) {
        e->message = prototype_->New(nullptr);
        e->space = 0;  // measured after the first use
      } else {
        e->arena.emplace();
        e->message = prototype_->New(e->arena->arena());
        e->space = e->arena->SpaceAllocated();
      }
    } catch (...) {  // std::bad_alloc: the entry goes back, empty
      e->Clear();
      cache_->Push(e);
      throw;
    }
    created_.Add(1);  // every use of a fresh arena: striped
  } else {
    e->Unpoison();
    retained_.Add(-static_cast<int64_t>(e->space));
  }
  in_use_.Add(1);
  return e;
}

void MessagePoolCore::Return(Entry* e, size_t size_hint) {
  ARENARPC_DCHECK(e->message->GetDescriptor() == prototype_->GetDescriptor(),
                  "MessagePool: message returned to the wrong pool");
  if (size_hint == kInterrupted) {
    // Never Clear() it (it may hold a null element); destroying is safe.
    interrupted_.fetch_add(1, std::memory_order_relaxed);
    e->Clear();
    cache_->Push(e);
    in_use_.Add(-1);  // last: at 0 no return is still inside the pool
    return;
  }
  if (e->large != nullptr) {
    // The input went to a fresh arena (ParseTarget): the heap instance was
    // not used and stays; the arena and what it holds go.
    if (size_hint != 0 && OneIn(4)) guard_->Observe(size_hint);
    e->large = nullptr;
    e->arena.reset();
    retained_.Add(static_cast<int64_t>(e->space));
    e->Poison(object_size_);
    cache_->Push(e);
    in_use_.Add(-1);  // last (see above)
    return;
  }
  if (fresh_arenas_ || (heap_instances_ && e->arena.has_value())) {
    // Clear() cannot keep this type, or heap instances are off for now (an
    // instance of a heap-instance pool on an arena is a fresh one, see
    // below): no walk, no guard (nothing is kept); the arena goes back to
    // the page pool, as in arena mode.
    if (!fresh_arenas_) {
      CountFreshReturn();
      if (guard_->Samples() < kYoungReturns) LearnFromFreshReturn(e, size_hint);
    }
    fresh_.Add(1);
    e->Clear();
    cache_->Push(e);
    in_use_.Add(-1);  // last (see above)
    return;
  }
  ReturnKept(e, size_hint);
}

// A returned message that stays in its entry: measured, cleared, and
// evicted if the guards say so.
void MessagePoolCore::ReturnKept(Entry* e, size_t size_hint) {
  Message* m = e->message;
  // The content size, where it costs nothing or on a random sample. A
  // heap-instance pool measures its first kYoungReturns returns (one
  // ByteSizeLong() walk each when no size is given): its guard gets a bound
  // after 64, and an input above it that reached an instance by other means
  // than ParseFrom() is seen at once, before many instances took one (each
  // such instance holds its capacity until it is evicted or aged).
  const bool learning = heap_instances_ && guard_->Samples() < kYoungReturns;
  size_t size = size_hint;
  if (size == 0) {
    const int cached = m->GetCachedSize();  // set if serialized during this use
    if (cached > 0) {
      size = static_cast<size_t>(cached);
    } else if (learning || OneIn(options_.sample_every)) {
      size = m->ByteSizeLong();
    }
  }
  if (size != 0) {
    e->peak = std::max(e->peak, size);
    // The guard's shared histogram takes 1 measured return in 4 (at
    // random), so threads rarely contend for its cache lines.
    if (learning || OneIn(4)) guard_->Observe(size);
  }
  m->Clear();
  m->ByteSizeLong();  // cached size := 0 (the message is empty: no walk)

  // Arena bytes this use allocated: none when Clear() kept everything it
  // needed; what it abandoned otherwise (or new capacity). A heap instance
  // abandons nothing (Clear() keeps or frees): its capacity is measured once
  // (one SpaceUsedLong() walk), later growth is bounded by the size guard.
  const uint64_t space = e->arena.has_value() ? e->arena->SpaceAllocated()
                         : e->uses == 0
                             ? static_cast<uint64_t>(m->SpaceUsedLong())
                             : e->space;
  const uint64_t grown = space > e->space ? space - e->space : 0;
  if (++e->uses == 1) {
    e->footprint = space;
  } else if (e->footprint > 0) {
    const uint64_t regrown = std::min(grown, e->footprint);
    regrown_bytes_.Add(static_cast<int64_t>(regrown));
    kept_bytes_.Add(static_cast<int64_t>(e->footprint - regrown));
  }
  e->space = space;
  ApplyGuards(e, size);
  retained_.Add(static_cast<int64_t>(e->space));
  e->Poison(object_size_);
  cache_->Push(e);
  in_use_.Add(-1);  // last (see Return)
}

// Growth, garbage and age: an entry that fails one is emptied.
void MessagePoolCore::ApplyGuards(Entry* e, size_t size) {
  const uint64_t space = e->space;
  const bool routed = std::exchange(e->routed, false);
  if (e->peak > guard_->Bound()) {
    evicted_.fetch_add(1, std::memory_order_relaxed);
    if (heap_instances_ && !routed && size > guard_->Bound()) {
      // Content above the bound in a heap instance, put there by other
      // means than ParseFrom() (protobuf's own parse, gRPC's deserializer,
      // the caller's writes): a malloc per object it has beyond the
      // instance's capacity, and a free per object now. The pool cannot
      // route such inputs (it sees their size after the parse), so it
      // serves fresh arenas for a while, arena mode's cost.
      TurnHeapInstancesOff();
    }
    e->Clear();
  } else if (e->footprint > 0 && static_cast<double>(space) >
                                     (1.0 + options_.max_garbage_ratio) *
                                         static_cast<double>(e->footprint)) {
    garbage_.fetch_add(1, std::memory_order_relaxed);
    e->Clear();
  } else if (options_.rebuild_every != 0 && e->uses >= options_.rebuild_every) {
    aged_.fetch_add(1, std::memory_order_relaxed);
    e->Clear();
  }
}

void MessagePoolCore::LearnFromFreshReturn(Entry* e, size_t size_hint) {
  // A heap-instance pool serving fresh arenas while it learns (its first
  // returns, fresh_returns_at_start): each return is measured, as heap
  // instances are in Return(), so that an input above the bound put there
  // by other means than ParseFrom() turns heap instances off before any
  // heap instance took one (on 35.1: 3-4 did, in the benchmark, before the
  // pool saw the first; docs/raw/reuse_skew/unrouted/protobuf35/).
  size_t size = size_hint;
  if (size == 0) {
    const int cached = e->message->GetCachedSize();
    size =
        cached > 0 ? static_cast<size_t>(cached) : e->message->ByteSizeLong();
  }
  if (size == 0) return;
  guard_->Observe(size);
  if (!e->routed && size > guard_->Bound()) TurnHeapInstancesOff();
}

void MessagePoolCore::TurnHeapInstancesOff() {
  unrouted_large_.fetch_add(1, std::memory_order_relaxed);
  fresh_returns_left_.store(options_.unrouted_fresh_returns,
                            std::memory_order_relaxed);
}

void MessagePoolCore::CountFreshReturn() {
  // One return in 64, by 64: a shared counter, rarely written.
  if (!OneIn(64)) return;
  int64_t left = fresh_returns_left_.load(std::memory_order_relaxed);
  while (left > 0 && !fresh_returns_left_.compare_exchange_weak(
                         left, std::max<int64_t>(0, left - 64),
                         std::memory_order_relaxed)) {
  }
}

void MessagePoolCore::Trim() { cache_->DrainDepot(); }

size_t MessagePoolCore::ReleaseIdleCaches(std::chrono::milliseconds idle_for) {
  return cache_->ReleaseIdle(idle_for);
}

MessagePoolStats MessagePoolCore::Stats() const {
  const PointerCacheStats c = cache_->Stats();
  MessagePoolStats s;
  s.acquisitions = c.hits + c.misses;
  s.created = static_cast<uint64_t>(std::max<int64_t>(0, created_.Sum()));
  s.reuse_hits = s.acquisitions > s.created ? s.acquisitions - s.created : 0;
  s.evicted_by_guard = evicted_.load(std::memory_order_relaxed);
  s.rebuilt_garbage = garbage_.load(std::memory_order_relaxed);
  s.rebuilt_aged = aged_.load(std::memory_order_relaxed);
  s.rebuilt_after_exception = interrupted_.load(std::memory_order_relaxed);
  s.fresh_arena_returns =
      static_cast<uint64_t>(std::max<int64_t>(0, fresh_.Sum()));
  s.large_on_arena = static_cast<uint64_t>(std::max<int64_t>(0, large_.Sum()));
  s.unrouted_large = unrouted_large_.load(std::memory_order_relaxed);
  s.fresh_arenas_now = ServingFreshArenas();
  s.dropped_idle = dropped_.load(std::memory_order_relaxed);
  s.in_use = static_cast<uint64_t>(std::max<int64_t>(0, in_use_.Sum()));
  s.idle = c.in_depot + c.in_threads;
  s.bound_bytes = guard_->Bound();
  s.retained_bytes =
      static_cast<uint64_t>(std::max<int64_t>(0, retained_.Sum()));
  const int64_t kept = kept_bytes_.Sum();
  const int64_t regrown = regrown_bytes_.Sum();
  if (kept + regrown > 0) {
    s.kept_percent = static_cast<uint64_t>(100 * kept / (kept + regrown));
  }
  return s;
}

}  // namespace arenarpc::internal
