// Thread churn (docs/OPERATE.md, "Threads and plugins"): waves of short-lived
// threads that each use arenas, a message pool and object pools, then exit.
// Shared by tests/thread_churn_test.cc (few threads) and bench/reliability/
// churn_bench.cc (1,000 threads x 10 waves, with RSS).
//
//   arenarpc::churn::Pools pools(&prototype);       // a filled message
//   arenarpc::churn::RunWave(/*threads=*/32, &pools);
//   arenarpc::churn::Snapshot s = arenarpc::churn::Take(pools);
//   for (const std::string& d : arenarpc::churn::Diff(base, s)) ...
//
// A wave's threads all hold their memory at once (a barrier), so each wave
// asks for the same peak and the pools' gauges after a wave are the same
// from one wave to the next unless something leaks. Thread safety: RunWave
// and Take from one thread at a time.
#ifndef ARENARPC_BENCH_RELIABILITY_CHURN_WORKLOAD_H_
#define ARENARPC_BENCH_RELIABILITY_CHURN_WORKLOAD_H_

#include <google/protobuf/message.h>

#include <barrier>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "arenarpc/arena.h"
#include "arenarpc/message_pool.h"
#include "arenarpc/object_pool.h"
#include "arenarpc/page_pool.h"

namespace arenarpc::churn {

struct Item {
  uint64_t id = 0;
  char payload[56] = {};
};

struct Pools {
  // `options`: the test's pool keeps heap instances from its first use.
  explicit Pools(const google::protobuf::Message* filled,
                 const MessagePoolOptions& options = {})
      : filled(filled), messages(filled, options) {}
  const google::protobuf::Message* filled;
  MessagePool<google::protobuf::Message> messages;
  ObjectPool<Item> objects;  // an instance, next to ObjectPool<Item>::Default()
};

// The gauges that must come back after every wave, and the counters whose
// per-wave increase must not grow.
struct Snapshot {
  std::vector<std::pair<std::string, uint64_t>> gauges;
  std::vector<std::pair<std::string, uint64_t>> counters;
};

inline Snapshot Take(const Pools& pools) {
  const PagePoolStats pp = PagePool::Default().Stats();
  const ArenaStats as = GetArenaStats();
  const MessagePoolStats ms = pools.messages.Stats();
  const ObjectPoolStats od = ObjectPool<Item>::Default().Stats();
  const ObjectPoolStats oi = pools.objects.Stats();
  Snapshot s;
  s.gauges = {
      {"page_pool.pages_in_use", pp.pages_in_use},
      {"page_pool.pages_cached", pp.pages_cached},
      {"page_pool.bytes_held", pp.bytes_held()},
      {"arena.arenas_idle", as.arenas_idle},
      {"message_pool.in_use", ms.in_use},
      {"message_pool.idle", ms.idle},
      {"message_pool.retained_bytes", ms.retained_bytes},
      {"object_pool_default.objects_in_use", od.objects_in_use},
      {"object_pool_default.objects_cached", od.objects_cached},
      {"object_pool_default.bytes_held", od.bytes_held},
      {"object_pool_instance.objects_in_use", oi.objects_in_use},
      {"object_pool_instance.objects_cached", oi.objects_cached},
      {"object_pool_instance.bytes_held", oi.bytes_held},
  };
  s.counters = {
      {"page_pool.os_pages_allocated", pp.os_pages_allocated},
      {"page_pool.os_pages_released", pp.os_pages_released},
      {"arena.arenas_created", as.arenas_created},
      {"message_pool.created", ms.created},
      {"message_pool.dropped_idle", ms.dropped_idle},
  };
  return s;
}

// Gauges of `now` that differ from `base`, as "name: base -> now". The
// page pool's cached pages may grow by `page_slack` pages: which thread
// gets a whole refill batch from the depot and which has to map one depends
// on how a wave's threads race (bounded by the depot's capacity). Pages
// lost by an exiting thread would show in pages_in_use, which must match.
inline std::vector<std::string> Diff(const Snapshot& base, const Snapshot& now,
                                     uint64_t page_slack = 0) {
  std::vector<std::string> out;
  const uint64_t page_size = PagePool::Default().page_size();
  for (size_t i = 0; i < base.gauges.size(); ++i) {
    uint64_t slack = 0;
    if (base.gauges[i].first == "page_pool.pages_cached") slack = page_slack;
    if (base.gauges[i].first == "page_pool.bytes_held")
      slack = page_slack * page_size;
    if (now.gauges[i].second < base.gauges[i].second ||
        now.gauges[i].second > base.gauges[i].second + slack) {
      out.push_back(base.gauges[i].first + ": " +
                    std::to_string(base.gauges[i].second) + " -> " +
                    std::to_string(now.gauges[i].second));
    }
  }
  return out;
}

// One thread's work: two arenas with a copy of the message each (pages),
// two pooled messages, objects from both object pools; half the objects
// are freed by the next thread of the wave (cross-thread returns).
inline void ThreadWork(Pools* pools, std::barrier<>* all_hold,
                       std::vector<Item*>* mine,
                       std::vector<Item*>* from_neighbour) {
  ScopedArena a, b;
  pools->filled->New(a.arena())->CopyFrom(*pools->filled);
  pools->filled->New(b.arena())->CopyFrom(*pools->filled);
  PooledMessage<google::protobuf::Message> m1 = pools->messages.Acquire();
  PooledMessage<google::protobuf::Message> m2 = pools->messages.Acquire();
  m1->CopyFrom(*pools->filled);
  m2->CopyFrom(*pools->filled);
  std::vector<Item*> local;
  for (int i = 0; i < 300; ++i) {
    local.push_back(ObjectPool<Item>::Default().New());
    mine->push_back(pools->objects.New());
  }
  all_hold->arrive_and_wait();  // every thread of the wave holds its memory
  for (Item* p : local) ObjectPool<Item>::Default().Delete(p);
  // The neighbour frees the even half of `mine`, this thread the odd half.
  for (size_t i = 0; i < from_neighbour->size(); i += 2) {
    pools->objects.Delete((*from_neighbour)[i]);
  }
  for (size_t i = 1; i < mine->size(); i += 2)
    pools->objects.Delete((*mine)[i]);
}

inline void RunWave(int threads, Pools* pools) {
  std::barrier<> all_hold(threads);
  std::vector<std::vector<Item*>> objects(threads);
  std::vector<std::thread> ts;
  ts.reserve(threads);
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back(ThreadWork, pools, &all_hold, &objects[t],
                    &objects[(t + 1) % threads]);
  }
  for (std::thread& t : ts) t.join();
}

}  // namespace arenarpc::churn

#endif  // ARENARPC_BENCH_RELIABILITY_CHURN_WORKLOAD_H_
