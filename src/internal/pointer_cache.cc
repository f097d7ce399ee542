#include "src/internal/pointer_cache.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>

namespace arenarpc::internal {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

PointerCache::PointerCache(size_t thread_capacity, size_t depot_capacity,
                           std::chrono::nanoseconds decay_period)
    : thread_capacity_(
          static_cast<uint32_t>(std::max<size_t>(1, thread_capacity))),
      batch_(std::max<size_t>(1, thread_capacity / 2)),
      depot_capacity_(depot_capacity),
      decay_period_(std::max(decay_period, std::chrono::nanoseconds(0))),
      next_decay_ns_(NowNs() + decay_period_.count()),
      key_(ThreadSlots::Register(this)) {
  depot_.reserve(std::min<size_t>(depot_capacity_, 1 << 16));
}

void PointerCache::Shutdown() {
  ThreadSlots::Unregister(key_);  // no OnThreadExit from here on
  std::vector<void*> items;
  {
    MutexLock lock(&mu_);
    for (Stack* s : stacks_) {
      const uint32_t n = s->count.load(std::memory_order_relaxed);
      items.insert(items.end(), s->items, s->items + n);
      delete s;
    }
    stacks_.clear();
    items.insert(items.end(), depot_.begin(), depot_.end());
    depot_.clear();
  }
  Destroy(items.data(), items.size());
}

PointerCache::Stack* PointerCache::StackForThisThread() {
  // Listed before it is published, so that an allocation failure (which
  // throws) leaves no stack that OnThreadExit cannot find.
  auto owned = std::make_unique<Stack>(thread_capacity_);
  Stack* s = owned.get();
  {
    MutexLock lock(&mu_);
    s->unchanged_since = std::chrono::steady_clock::now();
    stacks_.push_back(s);
  }
  if (!ThreadSlots::Set(key_, s)) {  // the thread is exiting: go uncached
    MutexLock lock(&mu_);
    stacks_.erase(std::find(stacks_.begin(), stacks_.end(), s));
    return nullptr;
  }
  return owned.release();
}

void* PointerCache::PopSlow(Stack* s) {
  if (s == nullptr) s = StackForThisThread();
  if (s == nullptr) {  // uncached: one item from the depot or Make()
    void* item = nullptr;
    return FromDepot(&item, 1) == 1 || Make(&item, 1) == 1 ? item : nullptr;
  }
  // Lock order: a stack's busy, then mu_. Make() and the depot may throw
  // (std::bad_alloc): StackLock unlocks the stack then too.
  StackLock stack_lock(s);
  size_t n = s->count.load(std::memory_order_relaxed);
  if (n > 0) {  // Pop() found the stack busy (ReleaseIdle), not empty
    Bump(s->hits);
  } else {
    Bump(s->misses);
    n = FromDepot(s->items, batch_);
    if (n == 0) n = Make(s->items, batch_);
  }
  if (n == 0) return nullptr;
  s->count.store(static_cast<uint32_t>(n - 1), std::memory_order_relaxed);
  return s->items[n - 1];
}

size_t PointerCache::FromDepot(void** out, size_t n) {
  MutexLock lock(&mu_);
  n = std::min(n, depot_.size());
  std::copy(depot_.end() - n, depot_.end(), out);
  depot_.resize(depot_.size() - n);
  depot_low_ = std::min(depot_low_, depot_.size());
  return n;
}

void PointerCache::PushSlow(Stack* s, void* item) {
  if (s == nullptr) s = StackForThisThread();
  if (s == nullptr) {
    ToDepot(&item, 1);
  } else {
    StackLock stack_lock(s);
    uint32_t n = s->count.load(std::memory_order_relaxed);
    if (n == thread_capacity_) {
      // Full: the bottom (coldest) batch goes to the depot.
      ToDepot(s->items, batch_);
      std::memmove(s->items, s->items + batch_, (n - batch_) * sizeof(void*));
      n -= static_cast<uint32_t>(batch_);
    }
    s->items[n] = item;
    s->count.store(n + 1, std::memory_order_relaxed);
  }
  MaybeDecay();  // with the stack unlocked: Decay() may empty it
}

void PointerCache::MaybeDecay() {
  if (decay_period_.count() == 0) return;
  const int64_t now = NowNs();
  int64_t next = next_decay_ns_.load(std::memory_order_relaxed);
  if (now < next ||
      !next_decay_ns_.compare_exchange_strong(next, now + decay_period_.count(),
                                              std::memory_order_relaxed)) {
    return;
  }
  bool more = false;
  Decay(&more);
  // The rest in slices soon, not all at once on this caller's thread.
  if (more) {
    next_decay_ns_.store(now + decay_period_.count() / 16,
                         std::memory_order_relaxed);
  }
}

size_t PointerCache::Decay(bool* more) {
  // Runs inside a Push, often in a destructor: allocates nothing, throws
  // nothing, destroys at most about kDecayBatch items per tick.
  void* batch[kDecayBatch];
  size_t n, unreached;
  {
    MutexLock lock(&mu_);
    // LIFO: the bottom depot_low_ items are the ones no Pop reached.
    unreached = std::min(depot_low_, depot_.size());
    n = std::min(unreached, kDecayBatch);
    std::copy_n(depot_.begin(), n, batch);
    depot_.erase(depot_.begin(),
                 depot_.begin() + static_cast<std::ptrdiff_t>(n));
    // Unreached ones left wait for the next slice; else every item now in
    // the depot is watched for a whole period.
    depot_low_ = unreached > n ? unreached - n : depot_.size();
  }
  Destroy(batch, n);
  if (more != nullptr) *more = unreached > n;
  if (unreached > n || decay_period_.count() == 0) return n;
  // Stacks unchanged for a period as the ticks see it (one to two; why not
  // half: docs/DESIGN_NOTES.md); the rest wait for the next tick.
  return n + ReleaseIdle(decay_period_, kDecayBatch);
}

void PointerCache::ToDepot(void* const* items, size_t n) {
  size_t kept;
  {
    MutexLock lock(&mu_);
    const size_t room =
        depot_capacity_ > depot_.size() ? depot_capacity_ - depot_.size() : 0;
    kept = std::min(n, room);
    depot_.insert(depot_.end(), items, items + kept);
  }
  if (kept < n) Destroy(items + kept, n - kept);
}

void PointerCache::OnThreadExit(void* stack) {
  auto* s = static_cast<Stack*>(stack);
  {
    MutexLock lock(&mu_);
    stacks_.erase(std::find(stacks_.begin(), stacks_.end(), s));
    retired_hits_ += s->hits.load(std::memory_order_relaxed);
    retired_misses_ += s->misses.load(std::memory_order_relaxed);
  }
  ToDepot(s->items, s->count.load(std::memory_order_relaxed));
  delete s;
}

void PointerCache::FlushThisThread() {
  auto* s = static_cast<Stack*>(ThreadSlots::Get(key_));
  if (s == nullptr) return;
  StackLock stack_lock(s);
  ToDepot(s->items, s->count.load(std::memory_order_relaxed));
  s->count.store(0, std::memory_order_relaxed);
}

size_t PointerCache::ReleaseIdle(std::chrono::nanoseconds idle_for,
                                 size_t max_items) {
  const auto now = std::chrono::steady_clock::now();
  std::vector<void*> items;
  {
    MutexLock lock(&mu_);
    for (Stack* s : stacks_) {
      if (items.size() >= max_items) break;  // the rest on a later call
      const uint64_t pops = s->hits.load(std::memory_order_relaxed) +
                            s->misses.load(std::memory_order_relaxed);
      const uint32_t count = s->count.load(std::memory_order_relaxed);
      // Every Pop counts a hit or a miss; every Push changes count.
      if (pops != s->seen_pops || count != s->seen_count) {
        s->seen_pops = pops;
        s->seen_count = count;
        s->unchanged_since = now;
      }
      if (count == 0 || now - s->unchanged_since < idle_for) continue;
      // In use right now: not idle. Never wait on a thread here (we hold
      // mu_, which its slow path may be waiting for).
      if (!s->TryLock()) continue;
      const uint32_t n = s->count.load(std::memory_order_relaxed);
      try {
        items.insert(items.end(), s->items, s->items + n);
      } catch (const std::bad_alloc&) {  // this stack and the rest stay
        s->unlock();
        break;
      }
      s->count.store(0, std::memory_order_relaxed);
      s->seen_count = 0;
      s->unlock();
    }
  }
  Destroy(items.data(), items.size());
  return items.size();
}

size_t PointerCache::DrainDepot() {
  std::vector<void*> items;
  {
    MutexLock lock(&mu_);
    items.swap(depot_);
    depot_.reserve(std::min<size_t>(depot_capacity_, 1 << 16));
    depot_low_ = 0;
  }
  Destroy(items.data(), items.size());
  return items.size();
}

PointerCacheStats PointerCache::Stats() const {
  PointerCacheStats c;
  MutexLock lock(&mu_);
  c.in_depot = depot_.size();
  c.hits = retired_hits_;
  c.misses = retired_misses_;
  for (const Stack* s : stacks_) {
    c.in_threads += s->count.load(std::memory_order_relaxed);
    c.hits += s->hits.load(std::memory_order_relaxed);
    c.misses += s->misses.load(std::memory_order_relaxed);
  }
  return c;
}

}  // namespace arenarpc::internal
