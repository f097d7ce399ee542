#include "arenarpc/internal/fixed_pool.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <new>
#include <thread>
#include <utility>

#include "arenarpc/object_pool.h"
#include "src/internal/memory_source.h"

namespace arenarpc::internal {
namespace {

constexpr uint64_t kBlockMagic = 0x4f424a504f4f4c31;  // "OBJPOOL1"
std::atomic<int> magazine_failures{0};  // FailMagazineAllocationsForTest

}  // namespace

void FailMagazineAllocationsForTest(int n) {
  magazine_failures.store(n, std::memory_order_relaxed);
}

struct Magazine {
  Magazine* next;  // in a depot list
  uint32_t count;  // valid while in the depot
  void* items[];   // magazine_size entries

  static void FreeList(Magazine* m) {
    while (m != nullptr) ::operator delete(std::exchange(m, m->next));
  }
};

// A thread pushes to and pops from its home shard, so on a steady workload
// magazines stay with the core that filled them; an empty home shard steals
// from the others before new slots are carved.
struct alignas(64) FixedPool::Shard {
  Mutex mu;
  Magazine* full ABSL_GUARDED_BY(mu) = nullptr;  // stack
  Magazine* partial ABSL_GUARDED_BY(mu) = nullptr;
  Magazine* empty ABSL_GUARDED_BY(mu) = nullptr;  // spares
  uint32_t empty_count ABSL_GUARDED_BY(mu) = 0;
  uint64_t in_depot ABSL_GUARDED_BY(mu) = 0;   // slots in full + partial
  uint64_t peak_full ABSL_GUARDED_BY(mu) = 0;  // most full since Trim()
  uint64_t lost ABSL_GUARDED_BY(mu) = 0;       // free slots dropped, see Put
  uint32_t magazine_size = 0;                  // the pool's
  uint32_t min_spares = 0;  // its share of max_empty_magazines

  ~Shard() {
    for (Magazine* m : {full, partial, empty}) Magazine::FreeList(m);
  }
  // nullptr if the heap refuses memory; nothing changed then.
  Magazine* NewMagazine() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    Magazine* m = empty;
    if (m != nullptr) {
      empty = m->next;
      --empty_count;
    } else if (__builtin_expect(
                   magazine_failures.load(std::memory_order_relaxed) > 0, 0) &&
               magazine_failures.fetch_sub(1, std::memory_order_relaxed) > 0) {
      return nullptr;
    } else {
      // nothrow: a failure must leave the depot and the caches as they were.
      m = static_cast<Magazine*>(::operator new (
          sizeof(Magazine) + sizeof(void*) * size_t{magazine_size},
          std::nothrow));
      if (m == nullptr) return nullptr;
    }
    m->next = nullptr;
    m->count = 0;
    return m;
  }
  // Keeps `m` as a spare while there are fewer than max(min_spares,
  // peak_full), else frees it (docs/DESIGN_NOTES.md, "The 2-thread gap").
  void FreeMagazine(Magazine* m) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (empty_count < min_spares || empty_count < peak_full) {
      m->next = empty;
      empty = m;
      ++empty_count;
    } else {
      ::operator delete(m);
    }
  }
  void Add(uint64_t n) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    in_depot += n;
    peak_full = std::max(peak_full, in_depot / magazine_size);
  }
  // Items no magazine can be found for (out of memory) are dropped and
  // counted: never reused, their block never trimmed.
  void Put(void* const* items, size_t n) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    while (n > 0) {
      // A full partial moves to the full stack only once its successor
      // exists: a failed allocation leaves no magazine in two places.
      if (partial == nullptr || partial->count == magazine_size) {
        Magazine* fresh = NewMagazine();
        if (fresh == nullptr) break;
        if (partial != nullptr) partial->next = std::exchange(full, partial);
        partial = fresh;
      }
      const size_t k = std::min<size_t>(n, magazine_size - partial->count);
      std::memcpy(partial->items + partial->count, items, k * sizeof(void*));
      partial->count += static_cast<uint32_t>(k);
      Add(k);
      items += k;
      n -= k;
    }
    lost += n;
  }
  // Both of c's magazines; c keeps them, empty.
  void Flush(ThreadCache* c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    Put(c->loaded->items, c->count());
    Put(c->previous->items, c->prev_count.load(std::memory_order_relaxed));
    c->Load(c->loaded->items, 0, magazine_size);
    c->prev_count.store(0, std::memory_order_relaxed);
  }
  template <class Fn>
  void ForEach(Fn fn) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {  // each depot item
    auto each = [&](Magazine* m) {
      for (uint32_t k = 0; k < m->count; ++k) fn(m->items[k]);
    };
    for (Magazine* m = full; m != nullptr; m = m->next) each(m);
    if (partial != nullptr) each(partial);
  }
  Magazine* TakeFull() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {  // or nullptr
    Magazine* m = full;
    if (m != nullptr) {
      full = m->next;
    } else if (partial != nullptr && partial->count > 0) {
      m = std::exchange(partial, nullptr);
    } else {
      return nullptr;
    }
    in_depot -= m->count;
    return m;
  }
};

struct FixedPool::BlockHeader {
  uint64_t magic;
  const FixedPool* owner;
  uint32_t carved;   // slots handed out of this block so far, guarded by mu_
  uint32_t scratch;  // Trim(): free slots counted in the depot
  // With has_bitmap_: one bit per slot, set while the slot is handed out.
  std::atomic<uint64_t>* in_use_bits() {
    return reinterpret_cast<std::atomic<uint64_t>*>(this + 1);
  }
};

void FixedPool::SetUp() {
  std::call_once(set_up_once_, [this] { Configure(ObjectPoolOptions{}); });
}

void FixedPool::Configure(const ObjectPoolOptions& options) {
  ARENARPC_CHECK(std::has_single_bit(align_) && align_ <= 4096,
                 "ObjectPool: alignment must be a power of two <= 4096");
  ARENARPC_CHECK(
      options.magazine_size >= 1 && options.magazine_size <= (1u << 20),
      "ObjectPool: magazine_size must be in [1, 2^20]");
  ARENARPC_CHECK(options.block_size <= (size_t{1} << 30),
                 "ObjectPool: block_size must be at most 1 GiB");
  key_ = ThreadSlots::Register(this);
  magazine_size_ = options.magazine_size;
  has_bitmap_ = ARENARPC_DEBUG_CHECKS;  // this library's build decides
  // At least 64 KiB, and grown until the slots after the header number 16.
  for (block_size_ =
           std::bit_ceil(std::max(options.block_size, size_t{1} << 16));
       ; block_size_ *= 2) {
    const size_t bitmap =
        has_bitmap_ ? 8 * ((block_size_ / stride_ + 63) / 64) : 0;
    header_size_ =
        Stride(sizeof(BlockHeader) + bitmap, std::max<size_t>(align_, 64));
    if (block_size_ >= header_size_ + 16 * stride_) break;
  }
  slots_per_block_ =
      std::min<size_t>((block_size_ - header_size_) / stride_, UINT32_MAX);
  num_shards_ = std::min(
      options.depot_shards != 0
          ? options.depot_shards
          : std::clamp(2 * std::thread::hardware_concurrency(), 4u, 64u),
      1024u);
  shards_ = new Shard[num_shards_];
  for (uint32_t i = 0; i < num_shards_; ++i) {
    shards_[i].magazine_size = magazine_size_;
    shards_[i].min_spares =
        (options.max_empty_magazines + num_shards_ - 1) / num_shards_;
  }
  ready_.store(true, std::memory_order_release);
}

FixedPool::~FixedPool() {
  if (!ready()) return;           // a Lazy pool never used
  ThreadSlots::Unregister(key_);  // no OnThreadExit from here on
  MutexLock lock(&mu_);
  for (ThreadCache* c : caches_) {
    ::operator delete(c->loaded);
    ::operator delete(c->previous);
    if (!c->in_tls) delete c;  // a thread_local one belongs to its thread
  }
  delete[] shards_;  // with their magazines
  for (BlockHeader* b : blocks_) UnmapBlock(b);
}

FixedPool::BlockHeader* FixedPool::MapBlock() {
  // Over-map by one block and cut the misaligned ends off.
  char* raw = static_cast<char*>(MapMemory(2 * block_size_));
  if (raw == nullptr) return nullptr;
  const size_t skip = -reinterpret_cast<uintptr_t>(raw) & (block_size_ - 1);
  if (skip > 0) UnmapMemory(raw, skip);
  UnmapMemory(raw + skip + block_size_, block_size_ - skip);
  auto* b = new (raw + skip) BlockHeader{kBlockMagic, this, 0, 0};
  if (has_bitmap_) {
    std::uninitialized_value_construct_n(b->in_use_bits(),
                                         (slots_per_block_ + 63) / 64);
  }
  ARENARPC_POISON(raw + skip + header_size_, block_size_ - header_size_);
  return b;
}

void FixedPool::UnmapBlock(BlockHeader* b) {
  b->magic = 0;
  // ASan wants the range clean before the OS may map it again elsewhere.
  ARENARPC_UNPOISON(b, block_size_);
  UnmapMemory(b, block_size_);
}

size_t FixedPool::CarveLocked(void** out, size_t n) {
  if (carving_ == nullptr || carving_->carved == slots_per_block_) {
    BlockHeader* b = MapBlock();
    if (b == nullptr) return 0;
    blocks_.push_back(b);
    carving_ = b;
  }
  const size_t k = std::min<size_t>(n, slots_per_block_ - carving_->carved);
  char* base = reinterpret_cast<char*>(carving_) + header_size_ +
               size_t{carving_->carved} * stride_;
  // The lowest address ends up on top of the stack: handed out first.
  for (size_t i = 0; i < k; ++i) out[k - 1 - i] = base + i * stride_;
  carving_->carved += static_cast<uint32_t>(k);
  carved_ += k;
  return k;
}

Magazine* FixedPool::TakeFullFromAnyShard(ThreadCache* c) {
  for (uint32_t i = 0; i < num_shards_; ++i) {
    Shard& sh = shards_[(c->home + i) % num_shards_];
    MutexLock lock(&sh.mu);
    if (Magazine* m = sh.TakeFull()) {
      sh.FreeMagazine(c->previous);
      return m;
    }
  }
  return nullptr;
}

ThreadCache* FixedPool::Attach(ThreadCache* c) {
  Ready();
  const bool in_tls = c != nullptr;
  if (!in_tls) c = new (std::nothrow) ThreadCache;
  if (c == nullptr) return nullptr;
  c->in_tls = in_tls;
  c->home = next_home_.fetch_add(1, std::memory_order_relaxed) % num_shards_;
  {
    Shard& sh = shards_[c->home];
    MutexLock lock(&sh.mu);
    c->loaded = sh.NewMagazine();
    c->previous = c->loaded != nullptr ? sh.NewMagazine() : nullptr;
    if (c->previous == nullptr) {  // uncached, retried next time
      if (c->loaded != nullptr) sh.FreeMagazine(c->loaded);
      c->loaded = nullptr;
      if (!in_tls) delete c;
      return nullptr;
    }
  }
  c->Load(c->loaded->items, 0, magazine_size_);
  c->prev_count.store(0, std::memory_order_relaxed);
  {
    MutexLock lock(&mu_);
    caches_.push_back(c);
  }
  if (!ThreadSlots::Set(key_, c)) {  // the thread is exiting: go uncached
    OnThreadExit(c);
    return nullptr;
  }
  return c;
}

void FixedPool::OnThreadExit(void* cache) {
  auto* c = static_cast<ThreadCache*>(cache);
  if (last_used_.cache == c) last_used_ = kNone;
  {
    MutexLock lock(&mu_);
    caches_.erase(std::find(caches_.begin(), caches_.end(), c));
  }
  {
    Shard& sh = shards_[c->home];
    MutexLock lock(&sh.mu);
    sh.Flush(c);
    sh.FreeMagazine(c->loaded);
    sh.FreeMagazine(c->previous);
  }
  if (!c->in_tls) {
    delete c;
    return;
  }
  // Back to the constant-initialised state: the next use takes the slow
  // path, whose Attach fails on an exiting thread (uncached from then on).
  c->Load(nullptr, 0, 0);
  c->loaded = c->previous = nullptr;
}

void* FixedPool::AllocateUncached() {
  for (uint32_t i = 0; i < num_shards_; ++i) {
    Shard& sh = shards_[i];
    MutexLock lock(&sh.mu);
    if ((sh.partial == nullptr || sh.partial->count == 0) &&
        sh.full != nullptr) {
      if (sh.partial != nullptr) sh.FreeMagazine(sh.partial);
      sh.partial = std::exchange(sh.full, sh.full->next);
    }
    if (sh.partial != nullptr && sh.partial->count > 0) {
      --sh.in_depot;
      return sh.partial->items[--sh.partial->count];
    }
  }
  void* p = nullptr;
  MutexLock lock(&mu_);
  CarveLocked(&p, 1);
  return p;
}

void* FixedPool::AllocateSlow(ThreadCache* c) {
  if (c == nullptr || c->loaded == nullptr) c = Attach(c);
  if (c == nullptr) return AllocateUncached();
  // The loaded magazine is empty (Pop failed, or just attached).
  uint32_t n = c->prev_count.load(std::memory_order_relaxed);
  if (n > 0) {  // the previous magazine still has slots: swap
    std::swap(c->loaded, c->previous);
    c->prev_count.store(0, std::memory_order_relaxed);
  } else if (Magazine* m = TakeFullFromAnyShard(c)) {  // both empty
    c->previous = c->loaded;  // c->previous went to the shard
    c->loaded = m;
    n = m->count;
  } else {  // the depot is empty: carve
    MutexLock lock(&mu_);
    n = static_cast<uint32_t>(CarveLocked(c->loaded->items, magazine_size_));
    if (n == 0) return nullptr;
  }
  c->Load(c->loaded->items, n - 1, magazine_size_);
  return c->loaded->items[n - 1];
}

void FixedPool::DeallocateSlow(ThreadCache* c, void* p) {
  if (c == nullptr || c->loaded == nullptr) c = Attach(c);
  if (c == nullptr) {
    Shard& sh = shards_[0];
    MutexLock lock(&sh.mu);
    sh.Put(&p, 1);
    return;
  }
  uint32_t n = c->count();
  if (n == magazine_size_) {
    const uint32_t prev = c->prev_count.load(std::memory_order_relaxed);
    if (prev < magazine_size_) {  // room in the previous magazine: swap
      std::swap(c->loaded, c->previous);
      c->prev_count.store(n, std::memory_order_relaxed);
      n = prev;
    } else {  // both full: the previous one goes to the depot
      Shard& sh = shards_[c->home];
      MutexLock lock(&sh.mu);
      Magazine* fresh = sh.NewMagazine();
      if (fresh == nullptr) {  // out of memory: p alone to the depot
        sh.Put(&p, 1);
        return;
      }
      c->previous->count = magazine_size_;
      c->previous->next = std::exchange(sh.full, c->previous);
      sh.Add(magazine_size_);
      c->previous = std::exchange(c->loaded, fresh);
      c->prev_count.store(n, std::memory_order_relaxed);
      n = 0;
    }
  }
  c->loaded->items[n] = p;
  c->Load(c->loaded->items, n + 1, magazine_size_);
}

void FixedPool::FlushThreadCache() {
  if (!ready()) return;  // nothing cached yet
  ThreadCache* c = GetCache();
  if (c == nullptr) return;
  Shard& sh = shards_[c->home];
  MutexLock lock(&sh.mu);
  sh.Flush(c);
}

size_t FixedPool::Trim() {
  if (!ready()) return 0;
  FlushThreadCache();
  std::vector<BlockHeader*> released;
  {
    std::vector<std::unique_lock<Mutex>> shard_locks;
    for (uint32_t i = 0; i < num_shards_; ++i)
      shard_locks.emplace_back(shards_[i].mu);
    MutexLock lock(&mu_);
    // A block whose every carved slot is free in the depot (and whose rest
    // was never carved) is unmapped.
    for (BlockHeader* b : blocks_) b->scratch = 0;
    for (uint32_t i = 0; i < num_shards_; ++i)
      shards_[i].ForEach([this](void* p) { ++HeaderOf(p)->scratch; });
    constexpr uint32_t kDying = UINT32_MAX;
    for (BlockHeader* b : blocks_) {
      if (b->scratch == b->carved) {
        b->scratch = kDying;
        released.push_back(b);
        carved_ -= b->carved;
        if (b == carving_) carving_ = nullptr;
      }
    }
    std::erase_if(blocks_, [](BlockHeader* b) { return b->scratch == kDying; });
    blocks_released_ += released.size();
    for (uint32_t i = 0; i < num_shards_; ++i) {
      Shard& sh = shards_[i];
      if (!released.empty()) {  // the depot without the released blocks
        std::vector<void*> keep;
        sh.ForEach([&](void* p) {
          if (HeaderOf(p)->scratch != kDying) keep.push_back(p);
        });
        while (Magazine* m = sh.TakeFull()) sh.FreeMagazine(m);
        sh.Put(keep.data(), keep.size());
      }
      Magazine::FreeList(std::exchange(sh.empty, nullptr));  // spares too
      sh.empty_count = 0;
      sh.peak_full = sh.in_depot / magazine_size_;  // spares start over
    }
  }
  for (BlockHeader* b : released) UnmapBlock(b);
  return released.size() * block_size_;
}

ObjectPoolStats FixedPool::Stats() const {
  ObjectPoolStats s;
  s.object_stride = stride_;
  if (!ready()) return s;
  for (uint32_t i = 0; i < num_shards_; ++i) {
    MutexLock lock(&shards_[i].mu);
    s.objects_in_depot += shards_[i].in_depot;
    s.objects_lost += shards_[i].lost;
  }
  MutexLock lock(&mu_);
  s.objects_cached = s.objects_in_depot;
  for (const ThreadCache* c : caches_) {
    s.objects_cached += c->CountForStats(magazine_size_) +
                        c->prev_count.load(std::memory_order_relaxed);
  }
  const uint64_t idle = s.objects_cached + s.objects_lost;
  s.objects_in_use = carved_ > idle ? carved_ - idle : 0;
  s.blocks_held = blocks_.size();
  s.bytes_held = s.blocks_held * block_size_;
  s.blocks_released = blocks_released_;
  return s;
}

void FixedPool::DebugCheckReturnable(const void* p) const {
  ARENARPC_CHECK(p != nullptr, "ObjectPool::Deallocate(nullptr)");
  BlockHeader* b = HeaderOf(p);
  ARENARPC_CHECK(b->magic == kBlockMagic && b->owner == this,
                 "ObjectPool::Delete/Deallocate: object is not from this pool");
  // Wraps around below the first slot: caught as too far.
  const size_t offset =
      (reinterpret_cast<uintptr_t>(p) & (block_size_ - 1)) - header_size_;
  const size_t slot = offset / stride_;
  ARENARPC_CHECK(offset % stride_ == 0 && slot < slots_per_block_,
                 "ObjectPool::Delete/Deallocate: not the address of an object");
  if (!has_bitmap_) return;  // a release library: ownership checks only
  const uint64_t bits =
      b->in_use_bits()[slot / 64].load(std::memory_order_relaxed);
  ARENARPC_CHECK((bits >> (slot % 64)) & 1,
                 "ObjectPool::Delete/Deallocate: object freed twice");
}

void FixedPool::DebugMark(const void* p, bool in_use) const {
  if (!has_bitmap_) return;
  const size_t slot =
      ((reinterpret_cast<uintptr_t>(p) & (block_size_ - 1)) - header_size_) /
      stride_;
  const uint64_t mask = uint64_t{1} << (slot % 64);
  std::atomic<uint64_t>& word = HeaderOf(p)->in_use_bits()[slot / 64];
  const uint64_t old = in_use
                           ? word.fetch_or(mask, std::memory_order_relaxed)
                           : word.fetch_and(~mask, std::memory_order_relaxed);
  ARENARPC_CHECK(((old & mask) != 0) != in_use,
                 in_use ? "ObjectPool: internal error: slot handed out twice"
                        : "ObjectPool::Delete/Deallocate: object freed twice");
}

}  // namespace arenarpc::internal
