// Where the pool's per-operation cost above the floor comes from, without
// the pool: the floor's loop (object_pool_bench.cc) in six variants,
//
//   reg-vec     the floor: stack count in a register, objects in one vector;
//   mem-vec     the count kept in a TLS atomic, loaded and stored on every
//               operation as ThreadCache::Pop/Push must (they are reachable
//               from the slow path, Stats() and the thread-exit hook),
//               addressed %fs:offset as the compiler does by default;
//   memreg-vec  the same count addressed offset(%reg), as ObjectPool's
//               Default() does (AMD Zen forwards the store to the next load
//               with no latency only for register-based addresses);
//   topreg-vec  a stack *pointer* instead of a count (no index load, no
//               items load), also offset(%reg): what a count derived from
//               the pointers at Stats() time would buy;
//   *-blocks    objects in 256 KiB blocks mapped and aligned like the
//               pool's (64-byte header, 2x over-map).
//
// Each round allocates --objects 64-byte objects writing a byte of each,
// shuffles (untimed), frees; thread CPU ns per alloc+free pair, shuffle
// excluded, variants interleaved, medians. Built by hand (docs/raw/FIGURES.md):
//
//   g++ -O2 -std=c++20 -pthread bench/object_pool/object_pool_floor_probe.cc
//     -o build/object_pool_floor_probe
//   build/object_pool_floor_probe [objects=100000] [reps=11] [rounds=30]
//     [threads=1]
//
// With threads > 1 every thread runs the same variant at the same time (own
// stack, own objects, a barrier after set-up), and the figure is the mean of
// the threads' CPU ns per pair: does a variant cost more relative to the
// floor when both cores are busy?
#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

namespace {

// Constant-initialised, like ObjectPool's: no TLS guard in the loop.
struct Cache {
  std::atomic<uint32_t> count{0};
  void** items = nullptr;
  std::atomic<void**> top{nullptr};
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
// kReg: reach `cache` through a pointer whose origin the compiler cannot
// see, so it addresses it offset(%reg), not %fs:offset.
template <bool kReg>
Cache& TheCache() {
  Cache* c = &cache;
  if (kReg) asm("" : "+r"(c));
  return *c;
}
template <bool kReg>
__attribute__((noinline)) void AllocMem(std::vector<void*>& ptrs) {
  Cache& c = TheCache<kReg>();
  unsigned char b = 0;
  for (void*& p : ptrs) {
    const uint32_t n = c.count.load(std::memory_order_relaxed);
    p = c.items[n - 1];
    c.count.store(n - 1, std::memory_order_relaxed);
    *static_cast<unsigned char*>(p) = ++b;
  }
}
template <bool kReg>
__attribute__((noinline)) void FreeMem(const std::vector<void*>& ptrs) {
  Cache& c = TheCache<kReg>();
  for (void* p : ptrs) {
    const uint32_t n = c.count.load(std::memory_order_relaxed);
    c.items[n] = p;
    c.count.store(n + 1, std::memory_order_relaxed);
  }
}

__attribute__((noinline)) void AllocTop(std::vector<void*>& ptrs) {
  Cache& c = TheCache<true>();
  unsigned char b = 0;
  for (void*& p : ptrs) {
    void** t = c.top.load(std::memory_order_relaxed) - 1;
    p = *t;
    c.top.store(t, std::memory_order_relaxed);
    *static_cast<unsigned char*>(p) = ++b;
  }
}
__attribute__((noinline)) void FreeTop(const std::vector<void*>& ptrs) {
  Cache& c = TheCache<true>();
  for (void* p : ptrs) {
    void** t = c.top.load(std::memory_order_relaxed);
    *t = p;
    c.top.store(t + 1, std::memory_order_relaxed);
  }
}

// A barrier for `n` threads, used once.
struct Barrier {
  std::atomic<int> left;
  void ArriveAndWait() {
    left.fetch_sub(1);
    while (left.load() > 0) std::this_thread::yield();
  }
};

double RunOnce(int mode, int objects, int rounds, uint64_t seed,
               Barrier* start) {
  // 0 register, 1 %fs:offset, 2 offset(%reg), 3 pointer at offset(%reg)
  const int count_at = mode % 4;
  const bool blocks = mode >= 4;
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
  cache.top.store(items.data() + items.size());
  std::mt19937_64 rng(seed);
  start->ArriveAndWait();
  // The thread's CPU time: time the shared machine runs someone else's
  // process is not counted (their cache traffic still is).
  struct Clock {
    using duration = std::chrono::nanoseconds;
    static duration now() {
      timespec ts;
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
      return duration(int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec);
    }
  };
  Clock::duration total{};
  for (int r = 0; r <= rounds; ++r) {  // round 0: warm-up
    const auto t0 = Clock::now();
    count_at == 0   ? AllocReg(ptrs)
    : count_at == 1 ? AllocMem<false>(ptrs)
    : count_at == 2 ? AllocMem<true>(ptrs)
                    : AllocTop(ptrs);
    const auto t1 = Clock::now();
    std::shuffle(ptrs.begin(), ptrs.end(), rng);
    const auto t2 = Clock::now();
    count_at == 0   ? FreeReg(ptrs)
    : count_at == 1 ? FreeMem<false>(ptrs)
    : count_at == 2 ? FreeMem<true>(ptrs)
                    : FreeTop(ptrs);
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
  const int threads = argc > 4 ? std::atoi(argv[4]) : 1;
  const char* names[] = {"reg-vec",       "mem-vec",      "memreg-vec",
                         "topreg-vec",    "reg-blocks",   "mem-blocks",
                         "memreg-blocks", "topreg-blocks"};
  constexpr int kModes = 8;
  std::vector<double> ns[kModes];
  for (int rep = 0; rep < reps; ++rep) {
    for (int i = 0; i < kModes; ++i) {
      const int mode = (i + rep) % kModes;  // rotated per rep
      std::vector<double> per_thread(threads);
      Barrier start{threads};
      std::vector<std::thread> workers;
      for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
          per_thread[t] =
              RunOnce(mode, objects, rounds, 1234 + rep + 1000 * t, &start);
        });
      }
      for (std::thread& w : workers) w.join();
      double sum = 0;
      for (double x : per_thread) sum += x;
      ns[mode].push_back(sum / threads);
      std::printf("rep %d %s %.3f\n", rep, names[mode], ns[mode].back());
    }
  }
  for (int m = 0; m < kModes; ++m) {
    std::sort(ns[m].begin(), ns[m].end());
    std::printf("median %s %.3f\n", names[m], ns[m][ns[m].size() / 2]);
  }
  return 0;
}
