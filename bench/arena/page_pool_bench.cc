// Google Benchmark of PagePool's fast paths (thread cache hits).
#include <benchmark/benchmark.h>

#include <vector>

#include "arenarpc/page_pool.h"

namespace {

// Allocate + Deallocate of one page: both served by the thread cache.
void BM_PagePoolAllocateDeallocate(benchmark::State& state) {
  arenarpc::PagePool& pool = arenarpc::PagePool::Default();
  pool.Deallocate(pool.Allocate());  // warm the cache
  for (auto _ : state) {
    void* p = pool.Allocate();
    benchmark::DoNotOptimize(p);
    pool.Deallocate(p);
  }
}
BENCHMARK(BM_PagePoolAllocateDeallocate)->ThreadRange(1, 2);

// Eight pages out, eight back: within the default 32-page cache.
void BM_PagePoolBurstOf8(benchmark::State& state) {
  arenarpc::PagePool& pool = arenarpc::PagePool::Default();
  void* pages[8];
  for (auto _ : state) {
    for (auto& p : pages) p = pool.Allocate();
    benchmark::DoNotOptimize(pages);
    for (auto* p : pages) pool.Deallocate(p);
  }
  state.SetItemsProcessed(state.iterations() * 8);
}
BENCHMARK(BM_PagePoolBurstOf8);

// Past the cache: batches move through the depot.
void BM_PagePoolBurstOf64(benchmark::State& state) {
  arenarpc::PagePool& pool = arenarpc::PagePool::Default();
  std::vector<void*> pages(64);
  for (auto _ : state) {
    for (auto& p : pages) p = pool.Allocate();
    benchmark::DoNotOptimize(pages.data());
    for (auto* p : pages) pool.Deallocate(p);
  }
  state.SetItemsProcessed(state.iterations() * 64);
}
BENCHMARK(BM_PagePoolBurstOf64);

// For scale: malloc/free of the same size.
void BM_MallocFree64K(benchmark::State& state) {
  for (auto _ : state) {
    void* p = malloc(64 << 10);
    benchmark::DoNotOptimize(p);
    free(p);
  }
}
BENCHMARK(BM_MallocFree64K);

}  // namespace
