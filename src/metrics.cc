#include "arenarpc/metrics.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "arenarpc/arena.h"
#include "arenarpc/internal/mutex.h"
#include "arenarpc/page_pool.h"
#include "src/internal/prometheus_writer.h"

namespace arenarpc {
namespace {

struct MessagePoolEntry {
  std::string name;
  bool used_by_grpc;
  MessagePoolStats (*stats)(const void*);
  const void* pool;
};

struct ObjectPoolEntry {
  std::string name;
  ObjectPoolStats (*stats)(const void*);
  const void* pool;
};

// Readers hold `mu` while they read a pool, and a destroyed pool leaves under
// `mu` before any of it is gone, so none is read after its destruction.
struct Registry {
  internal::Mutex mu;
  std::vector<MessagePoolEntry> message_pools ABSL_GUARDED_BY(mu);
  std::vector<ObjectPoolEntry> object_pools ABSL_GUARDED_BY(mu);
};

Registry& GetRegistry() {
  static Registry* const registry = new Registry();  // outlives all pools
  return *registry;
}

// Set once an ObjectPool registers: until then a destructor takes no lock.
std::atomic<bool> object_pool_registered{false};

void UnregisterMessagePool(const void* pool) {
  Registry& r = GetRegistry();
  internal::MutexLock lock(&r.mu);
  std::erase_if(r.message_pools,
                [pool](const MessagePoolEntry& e) { return e.pool == pool; });
}

std::string PoolLabel(const std::string& name) {
  return absl::StrCat("pool=\"", internal::PrometheusEscape(name), "\"");
}

// One family per field, one sample per registered pool.
template <class Stats>
struct PoolField {
  const char* name;
  const char* type;
  const char* help;
  uint64_t Stats::*field;
};

template <class Named, class Stats, size_t N>
void AppendPools(internal::PrometheusWriter& w, const std::vector<Named>& pools,
                 const PoolField<Stats> (&fields)[N]) {
  if (pools.empty()) return;
  for (const PoolField<Stats>& f : fields) {
    w.Family(f.name, f.type, f.help);
    for (const Named& p : pools) {
      w.Sample(f.name, PoolLabel(p.name), p.stats.*f.field);
    }
  }
}

void AppendPagePool(internal::PrometheusWriter& w) {
  const PagePoolStats pp = internal::DefaultPagePoolStats();
  w.One("arenarpc_page_pool_page_size_bytes", "gauge",
        "Bytes per page of the default page pool.", pp.page_size);
  w.One("arenarpc_page_pool_pages_in_use", "gauge",
        "Pages handed out and not yet returned.", pp.pages_in_use);
  w.One("arenarpc_page_pool_pages_cached", "gauge",
        "Pages kept for reuse in thread caches and the depot.",
        pp.pages_cached);
  w.One("arenarpc_page_pool_pages_in_depot", "gauge",
        "Pages kept for reuse in the shared depot.", pp.pages_in_depot);
  w.One("arenarpc_page_pool_bytes_held", "gauge",
        "Bytes mapped from the OS now (in use plus cached).", pp.bytes_held());
  w.One("arenarpc_page_pool_os_pages_allocated_total", "counter",
        "Pages mapped from the OS.", pp.os_pages_allocated);
  w.One("arenarpc_page_pool_os_pages_released_total", "counter",
        "Pages unmapped.", pp.os_pages_released);
  w.One("arenarpc_page_pool_cache_hits_total", "counter",
        "Allocations served by a thread cache.", pp.cache_hits);
  w.One("arenarpc_page_pool_cache_misses_total", "counter",
        "Allocations served by the depot or the OS.", pp.cache_misses);
}

void AppendArenas(internal::PrometheusWriter& w) {
  const ArenaStats as = GetArenaStats();
  w.One("arenarpc_arena_acquired_total", "counter", "ScopedArenas constructed.",
        as.arenas_acquired);
  w.One("arenarpc_arena_created_total", "counter",
        "protobuf Arena objects built.", as.arenas_created);
  w.One("arenarpc_arena_idle", "gauge", "Arenas kept for reuse.",
        as.arenas_idle);
  w.One("arenarpc_arena_heap_blocks_total", "counter",
        "Oversize arena blocks taken from the heap.", as.blocks_from_heap);
  w.One("arenarpc_arena_heap_bytes_total", "counter",
        "Bytes of oversize arena blocks.", as.bytes_from_heap);
  w.One("arenarpc_arena_heap_fallback_blocks_total", "counter",
        "Arena pages taken from the heap because the page pool had none.",
        as.blocks_from_heap_fallback);
}

void AppendMessagePools(internal::PrometheusWriter& w) {
  static constexpr PoolField<MessagePoolStats> kFields[] = {
      {"arenarpc_message_pool_acquisitions_total", "counter",
       "Messages acquired.", &MessagePoolStats::acquisitions},
      {"arenarpc_message_pool_reuse_hits_total", "counter",
       "Acquisitions served by an existing instance.",
       &MessagePoolStats::reuse_hits},
      {"arenarpc_message_pool_created_total", "counter", "Instances built.",
       &MessagePoolStats::created},
      {"arenarpc_message_pool_evicted_by_guard_total", "counter",
       "Instances rebuilt on return: held content above the bound.",
       &MessagePoolStats::evicted_by_guard},
      {"arenarpc_message_pool_rebuilt_garbage_total", "counter",
       "Instances rebuilt on return: abandoned arena bytes over the limit.",
       &MessagePoolStats::rebuilt_garbage},
      {"arenarpc_message_pool_rebuilt_aged_total", "counter",
       "Instances rebuilt after rebuild_every uses.",
       &MessagePoolStats::rebuilt_aged},
      {"arenarpc_message_pool_rebuilt_after_exception_total", "counter",
       "Instances destroyed on return: an exception interrupted their use.",
       &MessagePoolStats::rebuilt_after_exception},
      {"arenarpc_message_pool_fresh_arena_returns_total", "counter",
       "Returns that reset the instance's arena: Clear() cannot keep the "
       "type.",
       &MessagePoolStats::fresh_arena_returns},
      {"arenarpc_message_pool_large_on_arena_total", "counter",
       "ParseFrom() inputs above the bound parsed on a fresh arena instead "
       "of the heap instance.",
       &MessagePoolStats::large_on_arena},
      {"arenarpc_message_pool_unrouted_large_total", "counter",
       "Heap instances that held content above the bound not parsed by "
       "ParseFrom(); each turns heap instances off for a while.",
       &MessagePoolStats::unrouted_large},
      {"arenarpc_message_pool_dropped_idle_total", "counter",
       "Idle instances destroyed: idle bound, decay or trimming.",
       &MessagePoolStats::dropped_idle},
      {"arenarpc_message_pool_in_use", "gauge", "Messages on loan.",
       &MessagePoolStats::in_use},
      {"arenarpc_message_pool_idle", "gauge", "Instances kept for reuse.",
       &MessagePoolStats::idle},
      {"arenarpc_message_pool_bound_bytes", "gauge",
       "The growth guard's current bound.", &MessagePoolStats::bound_bytes},
      {"arenarpc_message_pool_retained_bytes", "gauge",
       "Arena bytes held by idle instances.",
       &MessagePoolStats::retained_bytes},
      {"arenarpc_message_pool_kept_percent", "gauge",
       "Share of an instance's arena bytes a use did not allocate again.",
       &MessagePoolStats::kept_percent},
  };
  AppendPools(w, GetMessagePoolStats(), kFields);
}

void AppendObjectPools(internal::PrometheusWriter& w) {
  // size_t and uint64_t are one type on the LP64 targets arenarpc builds on.
  static constexpr PoolField<ObjectPoolStats> kFields[] = {
      {"arenarpc_object_pool_object_stride_bytes", "gauge",
       "Bytes per object slot.", &ObjectPoolStats::object_stride},
      {"arenarpc_object_pool_objects_in_use", "gauge",
       "Objects created and not yet deleted.",
       &ObjectPoolStats::objects_in_use},
      {"arenarpc_object_pool_objects_cached", "gauge",
       "Free objects in thread caches and the depot.",
       &ObjectPoolStats::objects_cached},
      {"arenarpc_object_pool_objects_in_depot", "gauge",
       "Free objects in the shared depot.", &ObjectPoolStats::objects_in_depot},
      {"arenarpc_object_pool_blocks_held", "gauge", "Blocks mapped now.",
       &ObjectPoolStats::blocks_held},
      {"arenarpc_object_pool_bytes_held", "gauge",
       "Bytes of blocks mapped now.", &ObjectPoolStats::bytes_held},
      {"arenarpc_object_pool_blocks_released_total", "counter",
       "Blocks unmapped by Trim().", &ObjectPoolStats::blocks_released},
      {"arenarpc_object_pool_objects_lost_total", "counter",
       "Freed objects dropped: the heap refused a magazine to hold them.",
       &ObjectPoolStats::objects_lost},
  };
  AppendPools(w, GetObjectPoolStats(), kFields);
}

}  // namespace

namespace internal {

void RegisterMessagePool(std::string name, bool used_by_grpc,
                         MessagePoolStats (*stats)(const void*),
                         const void* pool) {
  SetMessagePoolDestroyedHook(&UnregisterMessagePool);
  Registry& r = GetRegistry();
  internal::MutexLock lock(&r.mu);
  r.message_pools.push_back({std::move(name), used_by_grpc, stats, pool});
}

void RegisterObjectPool(std::string name, ObjectPoolStats (*stats)(const void*),
                        const void* pool) {
  Registry& r = GetRegistry();
  internal::MutexLock lock(&r.mu);
  object_pool_registered.store(true, std::memory_order_relaxed);
  r.object_pools.push_back({std::move(name), stats, pool});
}

void NotifyObjectPoolDestroyed(const void* pool) {
  // A pool is registered on the thread that made it or after a
  // synchronisation with it, so this relaxed load sees that registration.
  if (!object_pool_registered.load(std::memory_order_relaxed)) return;
  Registry& r = GetRegistry();
  internal::MutexLock lock(&r.mu);
  std::erase_if(r.object_pools,
                [pool](const ObjectPoolEntry& e) { return e.pool == pool; });
}

}  // namespace internal

std::vector<NamedMessagePoolStats> GetMessagePoolStats() {
  // Under the lock: a pool being destroyed waits in UnregisterMessagePool
  // until this read is done (Stats() is cheap: no walk of messages).
  Registry& r = GetRegistry();
  internal::MutexLock lock(&r.mu);
  std::vector<NamedMessagePoolStats> out;
  out.reserve(r.message_pools.size());
  for (const MessagePoolEntry& p : r.message_pools) {
    out.push_back({p.name, p.used_by_grpc, p.stats(p.pool)});
  }
  return out;
}

std::vector<NamedObjectPoolStats> GetObjectPoolStats() {
  // Under the lock, as above (Stats(): one lock, no walk of objects).
  Registry& r = GetRegistry();
  internal::MutexLock lock(&r.mu);
  std::vector<NamedObjectPoolStats> out;
  out.reserve(r.object_pools.size());
  for (const ObjectPoolEntry& p : r.object_pools) {
    out.push_back({p.name, p.stats(p.pool)});
  }
  return out;
}

void AppendPrometheusText(std::string* out) {
  internal::PrometheusWriter w(out);
  AppendPagePool(w);
  AppendArenas(w);
  AppendMessagePools(w);
  AppendObjectPools(w);
}

std::string PrometheusText() {
  std::string out;
  AppendPrometheusText(&out);
  return out;
}

}  // namespace arenarpc
