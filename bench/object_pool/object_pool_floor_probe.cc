// Where the pool's per-operation cost above the floor comes from, without
// the pool: the floor's loop (object_pool_bench.cc) in four variants,
//
//   reg-vec     the floor: stack count in a register, objects in one vector;
//   mem-vec     the count kept in a TLS atomic, loaded and stored on every
//               operation as ThreadCache::Pop/Push must (they are reachable
//               from the slow path, Stats() and the thread-exit hook);
//   reg-blocks  objects in 256 KiB blocks mapped and aligned like the
//               pool's (64-byte header, 2x over-map);
//   mem-blocks  both.
//
// Each round allocates --objects 64-byte objects writing a byte of each,
// shuffles (untimed), frees; ns per alloc+free pair, shuffle excluded,
// variants interleaved, medians. Built by hand (docs/raw/FIGURES.md):
//
//   g++ -O2 -std=c++20 -pthread bench/object_pool/object_pool_floor_probe.cc
//     -o build/object_pool_floor_probe
//   build/object_pool_floor_probe [objects=100000] [reps=11] [rounds=30]
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

namespace {

// Constant-initialised, like ObjectPool's: no TLS guard in the loop.
struct Cache {
  std::atomic<uint32_t> count{0};
  void** items = nullptr;
};
constinit thread_local Cache cache;
constinit thread_local void** floor_items = nullptr;
constinit thread_local size_t floor_count = 0;

__attribute__((noinline)) void AllocReg(std::vector<void*>& ptrs) {
  unsigned char b = 0;
  for (void*& p : ptrs) {
    p = floor_items[--floor_count];
    *static_cast<unsigned char*>(p) = ++b;
  }
}
__attribute__((noinline)) void FreeReg(const std::vector<void*>& ptrs) {
  for (void* p : ptrs) floor_items[floor_count++] = p;
}
__attribute__((noinline)) void AllocMem(std::vector<void*>& ptrs) {
  unsigned char b = 0;
  for (void*& p : ptrs) {
    const uint32_t n = cache.count.load(std::memory_order_relaxed);
    p = cache.items[n - 1];
    cache.count.store(n - 1, std::memory_order_relaxed);
    *static_cast<unsigned char*>(p) = ++b;
  }
}
__attribute__((noinline)) void FreeMem(const std::vector<void*>& ptrs) {
  for (void* p : ptrs) {
    const uint32_t n = cache.count.load(std::memory_order_relaxed);
    cache.items[n] = p;
    cache.count.store(n + 1, std::memory_order_relaxed);
  }
}

double RunOnce(int mode, int objects, int rounds, uint64_t seed) {
  const bool reg = mode % 2 == 0;
  const bool blocks = mode >= 2;
  std::vector<unsigned char> vec;
  std::vector<void*> mappings;
  std::vector<void*> items(objects), ptrs(objects);
  constexpr size_t kBlock = size_t{256} << 10;
  if (!blocks) {
    vec.resize(size_t{64} * objects);
    for (int i = 0; i < objects; ++i) items[i] = &vec[size_t{64} * i];
  } else {
    for (int i = 0; i < objects;) {
      void* raw = mmap(nullptr, 2 * kBlock, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (raw == MAP_FAILED) std::abort();
      mappings.push_back(raw);
      char* b = reinterpret_cast<char*>(
          (reinterpret_cast<uintptr_t>(raw) + kBlock - 1) & ~(kBlock - 1));
      for (size_t k = 0; k < (kBlock - 64) / 64 && i < objects; ++k) {
        items[i++] = b + 64 + 64 * k;
      }
    }
  }
  floor_items = items.data();
  floor_count = items.size();
  cache.items = items.data();
  cache.count.store(static_cast<uint32_t>(items.size()));
  std::mt19937_64 rng(seed);
  using Clock = std::chrono::steady_clock;
  Clock::duration total{};
  for (int r = 0; r <= rounds; ++r) {  // round 0: warm-up
    const auto t0 = Clock::now();
    reg ? AllocReg(ptrs) : AllocMem(ptrs);
    const auto t1 = Clock::now();
    std::shuffle(ptrs.begin(), ptrs.end(), rng);
    const auto t2 = Clock::now();
    reg ? FreeReg(ptrs) : FreeMem(ptrs);
    const auto t3 = Clock::now();
    if (r > 0) total += (t1 - t0) + (t3 - t2);
  }
  for (void* m : mappings) munmap(m, 2 * kBlock);
  return std::chrono::duration<double, std::nano>(total).count() /
         (double(objects) * rounds);
}

}  // namespace

int main(int argc, char** argv) {
  const int objects = argc > 1 ? std::atoi(argv[1]) : 100000;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 11;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 30;
  const char* names[] = {"reg-vec", "mem-vec", "reg-blocks", "mem-blocks"};
  std::vector<double> ns[4];
  for (int rep = 0; rep < reps; ++rep) {
    for (int i = 0; i < 4; ++i) {
      const int mode = (i + rep) % 4;  // rotated per rep
      ns[mode].push_back(RunOnce(mode, objects, rounds, 1234 + rep));
      std::printf("rep %d %s %.3f\n", rep, names[mode], ns[mode].back());
    }
  }
  for (int m = 0; m < 4; ++m) {
    std::sort(ns[m].begin(), ns[m].end());
    std::printf("median %s %.3f\n", names[m], ns[m][ns[m].size() / 2]);
  }
  return 0;
}
