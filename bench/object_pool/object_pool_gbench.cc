// Fast paths of ObjectPool against new/delete (whatever malloc is linked).
//
//   build/op-rel/bench/object_pool_gbench --benchmark_min_time=0.2
//
// Pair: one New+Delete, always served by the thread cache.
// Batch: 1000 New then 1000 Delete, so magazines move to and from the depot.
// Shuffled: like Batch, freed in random order (the article's pattern).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "arenarpc/object_pool.h"

namespace {

struct Obj64 {
  uint64_t words[8];
};

arenarpc::ObjectPool<Obj64>& Pool() {
  static auto* pool = new arenarpc::ObjectPool<Obj64>();
  return *pool;
}

void BM_PoolNewDeletePair(benchmark::State& state) {
  auto& pool = Pool();
  for (auto _ : state) {
    Obj64* p = pool.New();
    benchmark::DoNotOptimize(p);
    pool.Delete(p);
  }
}
BENCHMARK(BM_PoolNewDeletePair)->Threads(1)->Threads(2);

void BM_HeapNewDeletePair(benchmark::State& state) {
  for (auto _ : state) {
    Obj64* p = new Obj64;
    benchmark::DoNotOptimize(p);
    delete p;
  }
}
BENCHMARK(BM_HeapNewDeletePair)->Threads(1)->Threads(2);

template <bool kShuffle>
void BM_PoolBatch(benchmark::State& state) {
  auto& pool = Pool();
  std::vector<void*> v(state.range(0));
  std::mt19937 rng(state.thread_index());
  for (auto _ : state) {
    for (auto& p : v) p = pool.Allocate();
    if (kShuffle) std::shuffle(v.begin(), v.end(), rng);
    for (void* p : v) pool.Deallocate(p);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_PoolBatch<false>)->Arg(1000)->Threads(1)->Threads(2);
BENCHMARK(BM_PoolBatch<true>)->Arg(1000)->Threads(1)->Threads(2);

template <bool kShuffle>
void BM_HeapBatch(benchmark::State& state) {
  std::vector<Obj64*> v(state.range(0));
  std::mt19937 rng(state.thread_index());
  for (auto _ : state) {
    for (auto& p : v) p = new Obj64;
    if (kShuffle) std::shuffle(v.begin(), v.end(), rng);
    for (Obj64* p : v) delete p;
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_HeapBatch<false>)->Arg(1000)->Threads(1)->Threads(2);
BENCHMARK(BM_HeapBatch<true>)->Arg(1000)->Threads(1)->Threads(2);

void BM_PoolStats(benchmark::State& state) {
  auto& pool = Pool();
  pool.Delete(pool.New());
  for (auto _ : state) benchmark::DoNotOptimize(pool.Stats());
}
BENCHMARK(BM_PoolStats);

}  // namespace
