// Core stats as Prometheus text: the page pool, arenas, and the message and
// object pools an application registers. No gRPC needed (arenarpc::grpc's
// RenderPrometheusStats() adds its own metrics to the same text).
//
//   // Once, where the pools are made (static storage duration or leaked):
//   static arenarpc::MessagePool<MyDoc> docs;
//   arenarpc::RegisterMessagePoolStats("my.Doc", &docs);
//   arenarpc::RegisterObjectPoolStats("my.Node",
//                                     &arenarpc::ObjectPool<Node>::Default());
//
//   // e.g. behind an HTTP /metrics handler:
//   std::string text = arenarpc::PrometheusText();
//
// PrometheusText() renders (text exposition format 0.0.4):
//   arenarpc_page_pool_*      PagePool::Default() (zeros before its first use)
//   arenarpc_arena_*          GetArenaStats()
//   arenarpc_message_pool_*   every registered MessagePool, label pool="..."
//                             (kReuse's pools register themselves)
//   arenarpc_object_pool_*    every registered ObjectPool, label pool="..."
//
// Reading stats has no side effect: it neither creates PagePool::Default()
// nor the arena cache, so SetGlobalArenaOptions() still works after it.
//
// Thread safety: everything here may be called from any thread at any time;
// a snapshot taken under load may be off by the operations in progress.
// Lifetime: a registered pool leaves the registry when it is destroyed.
#ifndef ARENARPC_METRICS_H_
#define ARENARPC_METRICS_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "arenarpc/message_pool.h"
#include "arenarpc/object_pool.h"

namespace arenarpc {

namespace internal {
// Make `pool` visible to GetMessagePoolStats() / GetObjectPoolStats() and
// PrometheusText(); `stats` reads it.
void RegisterMessagePool(std::string name, bool used_by_grpc, const void* pool,
                         std::function<MessagePoolStats()> stats);
void RegisterObjectPool(std::string name, const void* pool,
                        std::function<ObjectPoolStats()> stats);
}  // namespace internal

struct NamedMessagePoolStats {
  std::string name;
  bool used_by_grpc = false;
  MessagePoolStats stats;
};
std::vector<NamedMessagePoolStats> GetMessagePoolStats();

template <class T>
void RegisterMessagePoolStats(std::string name, const MessagePool<T>* pool) {
  internal::RegisterMessagePool(std::move(name), /*used_by_grpc=*/false, pool,
                                [pool] { return pool->Stats(); });
}

struct NamedObjectPoolStats {
  std::string name;
  ObjectPoolStats stats;
};
std::vector<NamedObjectPoolStats> GetObjectPoolStats();

template <class T>
void RegisterObjectPoolStats(std::string name, const ObjectPool<T>* pool) {
  internal::RegisterObjectPool(std::move(name), pool,
                               [pool] { return pool->Stats(); });
}

// The core stats above in the Prometheus text exposition format.
std::string PrometheusText();
// Appends the same to `*out` (RenderPrometheusStats() builds on it).
void AppendPrometheusText(std::string* out);

}  // namespace arenarpc

#endif  // ARENARPC_METRICS_H_
