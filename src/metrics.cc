#include "arenarpc/metrics.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
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

// A registered pool and how to read it.
template <class Named>
using Entries = std::vector<std::pair<const void*, std::function<Named()>>>;

// Readers hold `mu` while they read a pool, and a destroyed pool leaves under
// `mu` before any of it is gone, so none is read after its destruction.
struct Registry {
  internal::Mutex mu;
  Entries<NamedMessagePoolStats> message_pools ABSL_GUARDED_BY(mu);
  Entries<NamedObjectPoolStats> object_pools ABSL_GUARDED_BY(mu);
};

Registry& GetRegistry() {
  static Registry* const registry = new Registry();  // outlives all pools
  return *registry;
}

// Set once a pool registers: until then a destructor takes no lock.
std::atomic<bool> registered{false};

template <class Named>
void Unregister(Entries<Named> Registry::*entries, const void* pool) {
  // A pool is registered on the thread that made it or after a
  // synchronisation with it, so this relaxed load sees that registration.
  if (!registered.load(std::memory_order_relaxed)) return;
  Registry& r = GetRegistry();
  internal::MutexLock lock(&r.mu);
  std::erase_if(r.*entries, [pool](const auto& e) { return e.first == pool; });
}

// Under the lock: a pool being destroyed waits in Unregister() until this
// read is done (Stats() is cheap: no walk of messages or objects).
template <class Named>
std::vector<Named> ReadAll(Entries<Named> Registry::*entries) {
  Registry& r = GetRegistry();
  internal::MutexLock lock(&r.mu);
  std::vector<Named> out;
  out.reserve((r.*entries).size());
  for (const auto& [pool, read] : r.*entries) out.push_back(read());
  return out;
}

// One family per field, one sample per registered pool (label pool="...").
template <class Stats>
struct PoolField {
  const char* name;
  const char* help;
  uint64_t Stats::*field;
};

template <class Named, class Stats, size_t N>
void AppendPools(internal::PrometheusWriter& w, const char* prefix,
                 const std::vector<Named>& pools,
                 const PoolField<Stats> (&fields)[N]) {
  if (pools.empty()) return;
  for (const PoolField<Stats>& f : fields) {
    const std::string name = absl::StrCat(prefix, f.name);
    w.Family(name, f.help);
    for (const Named& p : pools) {
      w.Sample(
          name,
          absl::StrCat("pool=\"", internal::PrometheusEscape(p.name), "\""),
          p.stats.*f.field);
    }
  }
}

using M = MessagePoolStats;
constexpr PoolField<M> kMessagePoolFields[] = {
    {"acquisitions_total", "Messages acquired.", &M::acquisitions},
    {"reuse_hits_total", "Acquisitions served by an existing instance.",
     &M::reuse_hits},
    {"created_total", "Instances built.", &M::created},
    {"evicted_by_guard_total",
     "Instances rebuilt on return: held content above the bound.",
     &M::evicted_by_guard},
    {"rebuilt_garbage_total",
     "Instances rebuilt on return: abandoned arena bytes over the limit.",
     &M::rebuilt_garbage},
    {"rebuilt_aged_total", "Instances rebuilt after rebuild_every uses.",
     &M::rebuilt_aged},
    {"rebuilt_after_exception_total",
     "Instances destroyed on return: an exception interrupted their use.",
     &M::rebuilt_after_exception},
    {"fresh_arena_returns_total",
     "Returns that reset the instance's arena: Clear() cannot keep the type.",
     &M::fresh_arena_returns},
    {"large_on_arena_total",
     "ParseFrom() inputs above the bound parsed on a fresh arena instead of "
     "the heap instance.",
     &M::large_on_arena},
    {"unrouted_large_total",
     "Heap instances that held content above the bound not parsed by "
     "ParseFrom(); each turns heap instances off for a while.",
     &M::unrouted_large},
    {"dropped_idle_total",
     "Idle instances destroyed: idle bound, decay or trimming.",
     &M::dropped_idle},
    {"in_use", "Messages on loan.", &M::in_use},
    {"idle", "Instances kept for reuse.", &M::idle},
    {"bound_bytes", "The growth guard's current bound.", &M::bound_bytes},
    {"retained_bytes", "Arena bytes held by idle instances.",
     &M::retained_bytes},
    {"kept_percent",
     "Share of an instance's arena bytes a use did not allocate again.",
     &M::kept_percent},
};

// size_t and uint64_t are one type on the LP64 targets arenarpc builds on.
using O = ObjectPoolStats;
constexpr PoolField<O> kObjectPoolFields[] = {
    {"object_stride_bytes", "Bytes per object slot.", &O::object_stride},
    {"objects_in_use", "Objects created and not yet deleted.",
     &O::objects_in_use},
    {"objects_cached", "Free objects in thread caches and the depot.",
     &O::objects_cached},
    {"objects_in_depot", "Free objects in the shared depot.",
     &O::objects_in_depot},
    {"blocks_held", "Blocks mapped now.", &O::blocks_held},
    {"bytes_held", "Bytes of blocks mapped now.", &O::bytes_held},
    {"blocks_released_total", "Blocks unmapped by Trim().",
     &O::blocks_released},
    {"objects_lost_total",
     "Freed objects dropped: the heap refused a magazine to hold them.",
     &O::objects_lost},
};

}  // namespace

namespace internal {

void RegisterMessagePool(std::string name, bool used_by_grpc, const void* pool,
                         std::function<MessagePoolStats()> stats) {
  Registry& r = GetRegistry();
  internal::MutexLock lock(&r.mu);
  registered.store(true, std::memory_order_relaxed);
  r.message_pools.emplace_back(
      pool, [=, name = std::move(name), stats = std::move(stats)] {
        return NamedMessagePoolStats{name, used_by_grpc, stats()};
      });
}

void RegisterObjectPool(std::string name, const void* pool,
                        std::function<ObjectPoolStats()> stats) {
  Registry& r = GetRegistry();
  internal::MutexLock lock(&r.mu);
  registered.store(true, std::memory_order_relaxed);
  r.object_pools.emplace_back(
      pool, [=, name = std::move(name), stats = std::move(stats)] {
        return NamedObjectPoolStats{name, stats()};
      });
}

void NotifyMessagePoolDestroyed(const void* pool) {
  Unregister(&Registry::message_pools, pool);
}

void NotifyObjectPoolDestroyed(const void* pool) {
  Unregister(&Registry::object_pools, pool);
}

}  // namespace internal

std::vector<NamedMessagePoolStats> GetMessagePoolStats() {
  return ReadAll(&Registry::message_pools);
}

std::vector<NamedObjectPoolStats> GetObjectPoolStats() {
  return ReadAll(&Registry::object_pools);
}

void AppendPrometheusText(std::string* out) {
  internal::PrometheusWriter w(out);
  const PagePoolStats pp = internal::DefaultPagePoolStats();
  w.Ones(
      "arenarpc_page_pool_",
      {{"page_size_bytes", "Bytes per page of the default page pool.",
        pp.page_size},
       {"pages_in_use", "Pages handed out and not yet returned.",
        pp.pages_in_use},
       {"pages_cached", "Pages kept for reuse in thread caches and the depot.",
        pp.pages_cached},
       {"pages_in_depot", "Pages kept for reuse in the shared depot.",
        pp.pages_in_depot},
       {"bytes_held", "Bytes mapped from the OS now (in use plus cached).",
        pp.bytes_held()},
       {"os_pages_allocated_total", "Pages mapped from the OS.",
        pp.os_pages_allocated},
       {"os_pages_released_total", "Pages unmapped.", pp.os_pages_released},
       {"cache_hits_total", "Allocations served by a thread cache.",
        pp.cache_hits},
       {"cache_misses_total", "Allocations served by the depot or the OS.",
        pp.cache_misses}});
  const ArenaStats as = GetArenaStats();
  w.Ones("arenarpc_arena_",
         {{"acquired_total", "ScopedArenas constructed.", as.arenas_acquired},
          {"created_total", "protobuf Arena objects built.", as.arenas_created},
          {"idle", "Arenas kept for reuse.", as.arenas_idle},
          {"heap_blocks_total", "Oversize arena blocks taken from the heap.",
           as.blocks_from_heap},
          {"heap_bytes_total", "Bytes of oversize arena blocks.",
           as.bytes_from_heap},
          {"heap_fallback_blocks_total",
           "Arena pages taken from the heap because the page pool had none.",
           as.blocks_from_heap_fallback}});
  AppendPools(w, "arenarpc_message_pool_", GetMessagePoolStats(),
              kMessagePoolFields);
  AppendPools(w, "arenarpc_object_pool_", GetObjectPoolStats(),
              kObjectPoolFields);
}

std::string PrometheusText() {
  std::string out;
  AppendPrometheusText(&out);
  return out;
}

}  // namespace arenarpc
