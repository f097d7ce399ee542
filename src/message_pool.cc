#include "arenarpc/message_pool.h"

#include <google/protobuf/descriptor.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <optional>
#include <unordered_set>
#include <utility>

#include "arenarpc/arena.h"
#include "arenarpc/internal/check.h"
#include "arenarpc/internal/protobuf_compat.h"
#include "src/internal/bucket_percentile.h"
#include "src/internal/one_in.h"
#include "src/internal/pointer_cache.h"
#include "src/internal/size_guard.h"

namespace arenarpc::internal {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

// An instance, built lazily (a rebuilt idle one holds nothing).
struct MessagePoolCore::Entry {
  std::optional<ScopedArena> arena;  // the instance's, or that of `large`
  Message* message = nullptr;        // on *arena, or the heap
  Message* large = nullptr;   // this use's message if ParseTarget() made one
  uint64_t footprint = 0;     // bytes after the first use
  uint64_t space = 0;         // bytes at the last return
  size_t peak = 0;            // largest content measured since built
  uint32_t uses = 0;          // since built
  bool built = false;         // an instance kept between uses, ever
  bool new_instance = false;  // this use is that first build's
  size_t poisoned = 0;        // bytes of *message poisoned while idle (ASan)
  bool routed = false;        // this use went through ParseTarget()

  ~Entry() { Clear(); }
  // Idle, the message object is untouched (what it points to is not).
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
    message = large = nullptr;  // `large` is on the arena
    arena.reset();  // runs the arena's destructors, pages back to the pool
    footprint = space = peak = uses = 0;
    routed = false;
  }
};

namespace {

// A heap-instance pool measures its first kYoungReturns returns, so that an
// input above the bound not parsed by ParseFrom() is seen at once.
constexpr uint32_t kYoungReturns = 1024;
std::atomic<bool> heap_instances_for_test{false};

// The content size where it costs nothing: the hint, or the size cached by
// a serialization during this use; else 0.
size_t FreeSize(const Message& m, size_t hint) {
  if (hint != 0) return hint;
  const int cached = m.GetCachedSize();
  return cached > 0 ? static_cast<size_t>(cached) : 0;
}

// Why the generated Clear() drops `f`'s content (deletes it, or on an arena
// abandons it; by version: internal/protobuf_compat.h), or nullptr.
const char* DropReason(const FieldDescriptor* f) {
  if (f->is_map()) return "map field (entries are destroyed)";
  const bool object = f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE ||
                      f->cpp_type() == FieldDescriptor::CPPTYPE_STRING;
  if (f->real_containing_oneof() != nullptr && object) {
    return "oneof member (destroyed when the oneof is cleared)";
  }
  if (ClearDeletesSingularMessage(f)) {
    return "proto3 message field without has-bit (deleted by Clear)";
  }
  return nullptr;
}

bool FindDropped(const Descriptor* type,
                 std::unordered_set<const Descriptor*>& seen,
                 std::string& path) {
  if (!seen.insert(type).second) return false;
  for (int i = 0; i < type->field_count(); ++i) {
    const FieldDescriptor* f = type->field(i);
    if (const char* why = DropReason(f)) {
      path = std::string(f->name()) + ": " + why;
      return true;
    }
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE &&
        FindDropped(f->message_type(), seen, path)) {
      path = std::string(f->name()) + "." + path;
      return true;
    }
  }
  return false;
}

}  // namespace

std::string ReuseLimit(const Descriptor* type) {
  std::unordered_set<const Descriptor*> seen;
  std::string path;
  FindDropped(type, seen, path);
  return path;
}

class MessagePoolCore::Cache final : public PointerCache {
 public:
  Cache(MessagePoolCore* core, const MessagePoolOptions& o)
      : PointerCache(o.idle_per_thread, o.idle_max,
                     std::chrono::milliseconds(o.idle_decay_ms)),
        core_(core) {}
  ~Cache() override { Shutdown(); }

 protected:
  size_t Make(void** out, size_t) override {
    out[0] = new Entry;  // one at a time: idle instances cost memory
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

void SetHeapInstancesForTest(bool on) {
  heap_instances_for_test.store(on, std::memory_order_relaxed);
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
      cache_(std::make_unique<Cache>(this, options)),
      guard_(std::make_unique<SizeGuard>(options)),
      // A young heap-instance pool serves fresh arenas while it learns sizes.
      fresh_returns_left_(heap_instances_ ? options.fresh_returns_at_start
                                          : 0) {
  ARENARPC_CHECK(prototype != nullptr, "MessagePool: null prototype");
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
  // Arena instances take a large input on their own arena already.
  if (!heap_instances_ || !options_.large_inputs_on_arena ||
      e->large != nullptr || e->arena.has_value() ||
      wire_size <= guard_->Bound()) {
    return MessageOf(e);
  }
  // Into a heap instance: a malloc per object beyond its capacity and a
  // free per object on eviction; an arena takes them in bulk.
  e->message->Clear();  // ParseFrom() replaces the content: drop any writes
  e->arena.emplace();
  e->large = prototype_->New(e->arena->arena());
  large_.Add(1);
  return e->large;
}

MessagePoolCore::Entry* MessagePoolCore::Acquire() {
  auto* e = static_cast<Entry*>(cache_->Pop());
  ARENARPC_CHECK(e != nullptr, "MessagePool: out of memory");
  e->Unpoison();
  e->new_instance = false;
  if (e->message != nullptr) {
    retained_.Add(-static_cast<int64_t>(e->space));
    // A heap instance while heap instances are off: a fresh arena instead.
    if (!e->arena.has_value() && ServingFreshArenas()) e->Clear();
  }
  if (e->message != nullptr) {
    in_use_.Add(1);
    return e;
  }
  // Read once: other threads turn fresh arenas on and off.
  const bool fresh = ServingFreshArenas();
  // An entry's first kept instance (the pool grew), not a rebuild, whose
  // cost recurs in steady state, nor a fresh arena.
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
  } else if (e->large != nullptr) {
    // The input went to a fresh arena: it goes, the heap instance stays.
    if (size_hint != 0 && OneIn(4)) guard_->Observe(size_hint);
    e->large = nullptr;
    e->arena.reset();
    retained_.Add(static_cast<int64_t>(e->space));
    e->Poison(object_size_);
  } else if (fresh_arenas_ || (heap_instances_ && e->arena.has_value())) {
    // A lossy type, or heap instances off for now (an arena instance of a
    // heap-instance pool is a fresh one): nothing is kept, as arena mode.
    if (!fresh_arenas_) FreshReturn(e, size_hint);
    fresh_.Add(1);
    e->Clear();
  } else {
    ReturnKept(e, size_hint);
  }
  cache_->Push(e);
  in_use_.Add(-1);  // last: at 0 no return is still inside the pool
}

// A returned instance that stays: measured, cleared, guarded.
void MessagePoolCore::ReturnKept(Entry* e, size_t size_hint) {
  Message* m = e->message;
  const bool learning = heap_instances_ && guard_->Samples() < kYoungReturns;
  size_t size = FreeSize(*m, size_hint);
  if (size == 0 && (learning || OneIn(options_.sample_every))) {
    size = m->ByteSizeLong();
  }
  if (size != 0) {
    e->peak = std::max(e->peak, size);
    // 1 in 4 into the shared histogram: threads rarely contend for it.
    if (learning || OneIn(4)) guard_->Observe(size);
  }
  m->Clear();
  m->ByteSizeLong();  // cached size := 0 (the message is empty: no walk)

  // Arena bytes this use allocated. A heap instance abandons nothing: one
  // SpaceUsedLong() walk on the first use; the size guard bounds growth.
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
}

// Growth, garbage and age: an entry that fails one is emptied.
void MessagePoolCore::ApplyGuards(Entry* e, size_t size) {
  const bool routed = std::exchange(e->routed, false);
  if (e->peak > guard_->Bound()) {
    evicted_.fetch_add(1, std::memory_order_relaxed);
    // Content above the bound in a heap instance, not parsed by
    // ParseFrom(): the pool cannot route such inputs before the parse.
    if (heap_instances_ && !routed && size > guard_->Bound()) {
      TurnHeapInstancesOff();
    }
    e->Clear();
  } else if (e->footprint > 0 && static_cast<double>(e->space) >
                                     (1.0 + options_.max_garbage_ratio) *
                                         static_cast<double>(e->footprint)) {
    garbage_.fetch_add(1, std::memory_order_relaxed);
    e->Clear();
  } else if (options_.rebuild_every != 0 && e->uses >= options_.rebuild_every) {
    aged_.fetch_add(1, std::memory_order_relaxed);
    e->Clear();
  }
}

void MessagePoolCore::TurnHeapInstancesOff() {
  unrouted_large_.fetch_add(1, std::memory_order_relaxed);
  fresh_returns_left_.store(options_.unrouted_fresh_returns,
                            std::memory_order_relaxed);
}

// A fresh-arena return of a heap-instance pool (measured while young).
void MessagePoolCore::FreshReturn(Entry* e, size_t size_hint) {
  if (OneIn(64)) {  // counts 64: a shared counter, rarely written
    int64_t left = fresh_returns_left_.load(std::memory_order_relaxed);
    while (left > 0 && !fresh_returns_left_.compare_exchange_weak(
                           left, std::max<int64_t>(0, left - 64),
                           std::memory_order_relaxed)) {
    }
  }
  if (guard_->Samples() >= kYoungReturns) return;
  size_t size = FreeSize(*e->message, size_hint);
  if (size == 0) size = e->message->ByteSizeLong();
  if (size == 0) return;
  guard_->Observe(size);
  if (!e->routed && size > guard_->Bound()) TurnHeapInstancesOff();
}

void MessagePoolCore::Trim() { cache_->DrainDepot(); }

size_t MessagePoolCore::ReleaseIdleCaches(std::chrono::milliseconds idle_for) {
  return cache_->ReleaseIdle(idle_for);
}

MessagePoolStats MessagePoolCore::Stats() const {
  const PointerCacheStats c = cache_->Stats();
  constexpr auto relaxed = std::memory_order_relaxed;
  MessagePoolStats s;
  s.acquisitions = c.hits + c.misses;
  s.created = created_.NonNegativeSum();
  s.reuse_hits = s.acquisitions > s.created ? s.acquisitions - s.created : 0;
  s.evicted_by_guard = evicted_.load(relaxed);
  s.rebuilt_garbage = garbage_.load(relaxed);
  s.rebuilt_aged = aged_.load(relaxed);
  s.rebuilt_after_exception = interrupted_.load(relaxed);
  s.fresh_arena_returns = fresh_.NonNegativeSum();
  s.large_on_arena = large_.NonNegativeSum();
  s.unrouted_large = unrouted_large_.load(relaxed);
  s.fresh_arenas_now = ServingFreshArenas();
  s.dropped_idle = dropped_.load(relaxed);
  s.in_use = in_use_.NonNegativeSum();
  s.idle = c.in_depot + c.in_threads;
  s.bound_bytes = guard_->Bound();
  s.retained_bytes = retained_.NonNegativeSum();
  const int64_t kept = kept_bytes_.Sum();
  const int64_t regrown = regrown_bytes_.Sum();
  if (kept + regrown > 0) {
    s.kept_percent = static_cast<uint64_t>(100 * kept / (kept + regrown));
  }
  return s;
}

// The growth guard (size_guard.h).
void SizeGuard::Observe(size_t size) {
  const int bucket = std::min<int>(std::bit_width(size), kBuckets - 1);
  histogram_[bucket].fetch_add(1, std::memory_order_relaxed);
  const uint32_t n = samples_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (n % 64 != 0) return;
  uint64_t counts[kBuckets];
  for (int i = 0; i < kBuckets; ++i) {
    counts[i] = histogram_[i].load(std::memory_order_relaxed);
  }
  const size_t b =
      PercentileBucket(counts, options_.percentile).value_or(kBuckets - 1);
  const double upper = b == 0 ? 1.0 : static_cast<double>(uint64_t{1} << b);
  const size_t bound = static_cast<size_t>(options_.slack * upper);
  bound_.store(std::min(std::max(bound, options_.min_bound_bytes),
                        options_.hard_cap_bytes),
               std::memory_order_relaxed);
  if (n % 1024 == 0) {  // decay: recent sizes weigh more
    for (auto& h : histogram_) {
      h.store(h.load(std::memory_order_relaxed) / 2, std::memory_order_relaxed);
    }
  }
}

}  // namespace arenarpc::internal
