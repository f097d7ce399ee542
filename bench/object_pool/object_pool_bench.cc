// The object pool article's workload, one allocator per run:
//
//   object_pool_bench --alloc=pool --threads=1,2,4 --size=64 --rounds=50
//   object_pool_bench_mimalloc --alloc=direct ...  // mi_malloc, linked
//   LD_PRELOAD=libmimalloc.so.2 object_pool_bench --alloc=malloc ...
//
// Each thread allocates --objects objects of --size bytes and writes one byte
// of each, shuffles the pointers, frees them all; --rounds times, after one
// untimed warm-up round. Prints one line per thread count: "time <alloc>
// <size> <threads> <ns>", where ns is wall time / (threads * objects *
// rounds), i.e. per alloc+free pair, harness (shuffle, byte write) included,
// then cpu_ns=<process CPU time per pair>.
// bench/object_pool/object_pool_compare.py runs every competitor and tabulates.
//
// --alloc: floor (a per-thread stack of pre-made pointers: the harness
// alone), pool (arenarpc::ObjectPool<T>::Default()), pool-instance (an
// ObjectPool<T> object), naive (a thread-local linked free list), boost
// (boost::singleton_pool), pmr (std::pmr::synchronized_pool_resource),
// malloc (malloc/free: glibc, or whatever LD_PRELOAD puts in its place),
// direct (only in the object_pool_bench_<allocator> builds of this file:
// that allocator's own API, linked and called directly: mi_malloc/mi_free,
// jemalloc mallocx/sdallocx, tcmalloc tc_malloc/tc_free_sized).
//
// Pool tuning (pool-instance): --magazine=N --empty_magazines=N --shards=N.
// --serial_warmup: the threads' untimed warm-up rounds run one after the
// other (each thread's first carved objects contiguous in the pool's blocks).
// Each time line also gives thread_cpu_ns=<min>/<max>: the least and most
// loaded thread's own CPU time per pair.
// --mode=rss: --threads threads each keep --objects live objects (written in
// full); prints the RSS growth over the payload, then frees everything, lets
// the threads exit, trims (ObjectPool::Trim, malloc_trim, mi_collect, ...)
// and prints what is still held.
// --mode=prodcons: --producers threads allocate --objects objects in total
// and hand them in batches through a bounded queue (--in_flight objects) to
// --consumers threads that free them; prints ns per pair, the peak RSS
// growth and, for the pools, the peak bytes the pool held against its bound;
// cpu_ns: the process CPU time per object (all threads).
#include <dlfcn.h>
#include <malloc.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory_resource>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "arenarpc/object_pool.h"

#if defined(OBJECT_POOL_BENCH_MIMALLOC)
#include <mimalloc.h>
#elif defined(OBJECT_POOL_BENCH_JEMALLOC)
#include <jemalloc/jemalloc.h>
#elif defined(OBJECT_POOL_BENCH_TCMALLOC)
#include <gperftools/tcmalloc.h>
#endif

#if __has_include(<boost/pool/singleton_pool.hpp>)
#include <boost/pool/singleton_pool.hpp>
#define HAVE_BOOST_POOL 1
#endif

namespace {

struct Flags {
  std::string alloc = "pool";
  std::string mode = "time";
  std::vector<int> threads = {1, 2, 4, 8, 16};
  size_t size = 64;
  int objects = 100000;
  int rounds = 50;
  int producers = 1;
  int consumers = 1;
  int in_flight = 16384;
  std::string label;           // printed instead of --alloc
  bool serial_warmup = false;  // warm-up rounds one thread after another
  arenarpc::ObjectPoolOptions pool_options;
};

// --- allocators
// ------------------------------------------------------------------ Each:
// static void* Alloc(); static void Free(void*); static void Trim().

template <size_t kSize>
struct Obj {
  alignas(8) unsigned char bytes[kSize];
};

struct MallocAlloc {
  static size_t size;
  static void* Alloc() { return std::malloc(size); }
  static void Free(void* p) { std::free(p); }
  static void Trim() {
    // Whatever allocator is in place: ask it to return free memory.
    using VoidFn = void (*)();
    using BoolFn = void (*)(bool);
    using CmdFn = int (*)(int, void*);
    using CtlFn = int (*)(const char*, void*, size_t*, void*, size_t);
    if (auto f = reinterpret_cast<BoolFn>(dlsym(RTLD_DEFAULT, "mi_collect")))
      f(true);
    if (auto f = reinterpret_cast<VoidFn>(
            dlsym(RTLD_DEFAULT, "MallocExtension_ReleaseFreeMemory"))) {
      f();
    }
    if (auto f = reinterpret_cast<CtlFn>(dlsym(RTLD_DEFAULT, "mallctl"))) {
      f("arena.4096.purge", nullptr, nullptr, nullptr, 0);  // all arenas
    }
    if (auto f = reinterpret_cast<CmdFn>(
            dlsym(RTLD_DEFAULT, "scalable_allocation_command"))) {
      f(1 /*TBBMALLOC_CLEAN_ALL_BUFFERS*/, nullptr);
    }
    malloc_trim(0);
  }
};
size_t MallocAlloc::size = 64;

// An allocator's own API, linked into this build (no malloc interposition),
// with the sized free where it has one.
struct DirectAlloc {
  static size_t size;
#if defined(OBJECT_POOL_BENCH_MIMALLOC)
  static void* Alloc() { return mi_malloc(size); }
  static void Free(void* p) { mi_free(p); }
#elif defined(OBJECT_POOL_BENCH_JEMALLOC)
  static void* Alloc() { return mallocx(size, 0); }
  static void Free(void* p) { sdallocx(p, size, 0); }
#elif defined(OBJECT_POOL_BENCH_TCMALLOC)
  static void* Alloc() { return tc_malloc(size); }
  static void Free(void* p) { tc_free_sized(p, size); }
#else  // not this build: --alloc=direct is refused before these run
  static void* Alloc() { return nullptr; }
  static void Free(void*) {}
#endif
  static void Trim() { MallocAlloc::Trim(); }
};
size_t DirectAlloc::size = 64;
#if defined(OBJECT_POOL_BENCH_MIMALLOC) || \
    defined(OBJECT_POOL_BENCH_JEMALLOC) || defined(OBJECT_POOL_BENCH_TCMALLOC)
constexpr bool kHaveDirect = true;
#else
constexpr bool kHaveDirect = false;
#endif

// ObjectPool<T>::Default(): the per-type pool, as a user calls it.
template <size_t kSize>
struct PoolAlloc {
  static arenarpc::ObjectPool<Obj<kSize>>& pool() {
    return arenarpc::ObjectPool<Obj<kSize>>::Default();
  }
  static void* Alloc() { return pool().Allocate(); }
  static void Free(void* p) { pool().Deallocate(p); }
  static void Trim() { pool().Trim(); }
  static uint64_t HeldBytes() { return pool().Stats().bytes_held; }
  static size_t PerThreadCache() { return 2 * 256; }  // default options
};

// An ObjectPool<T> instance.
template <size_t kSize>
struct InstancePoolAlloc {
  // Made before main(): no guard check in the loop (the floor has none).
  static inline arenarpc::ObjectPool<Obj<kSize>>* instance = nullptr;
  static inline size_t magazine = 256;
  static void Init(const arenarpc::ObjectPoolOptions& o) {
    instance = new arenarpc::ObjectPool<Obj<kSize>>(o);
    magazine = o.magazine_size;
  }
  static arenarpc::ObjectPool<Obj<kSize>>& pool() { return *instance; }
  static void* Alloc() { return pool().Allocate(); }
  static void Free(void* p) { pool().Deallocate(p); }
  static void Trim() { pool().Trim(); }
  static uint64_t HeldBytes() { return pool().Stats().bytes_held; }
  static size_t PerThreadCache() { return 2 * magazine; }
};

// A naive pool: a thread-local singly linked free list threaded through the
// free objects, new objects carved from thread-local chunks. Frees go to the
// freeing thread's list, so a producer/consumer pair grows without bound.
template <size_t kSize>
struct NaiveAlloc {
  struct Node {
    Node* next;
  };
  static constexpr size_t kStride = kSize < sizeof(Node) ? sizeof(Node) : kSize;
  struct Local {
    Node* head = nullptr;
    char* chunk = nullptr;
    size_t left = 0;
  };
  static Local& local() {
    static thread_local Local l;
    return l;
  }
  static void* Alloc() {
    Local& l = local();
    if (l.head != nullptr) {
      Node* n = l.head;
      l.head = n->next;
      return n;
    }
    if (l.left == 0) {  // leaked on purpose, like the pools it models
      l.chunk = static_cast<char*>(std::malloc(kStride * 4096));
      l.left = 4096;
    }
    --l.left;
    return l.chunk + l.left * kStride;
  }
  static void Free(void* p) {
    Local& l = local();
    auto* n = static_cast<Node*>(p);
    n->next = l.head;
    l.head = n;
  }
  static void Trim() {}
};

#ifdef HAVE_BOOST_POOL
template <size_t kSize>
struct BoostAlloc {
  struct Tag {};
  using Pool = boost::singleton_pool<Tag, kSize>;
  static void* Alloc() { return Pool::malloc(); }
  static void Free(void* p) { Pool::free(p); }
  static void Trim() { Pool::release_memory(); }
};
#endif

template <size_t kSize>
struct PmrAlloc {
  static std::pmr::synchronized_pool_resource& res() {
    static auto* r = new std::pmr::synchronized_pool_resource();
    return *r;
  }
  static void* Alloc() { return res().allocate(kSize, 8); }
  static void Free(void* p) { res().deallocate(p, kSize, 8); }
  static void Trim() { res().release(); }
};

// The floor: what the harness costs with an allocator that does nothing but
// pop and push pointers it was given up front.
struct FloorStack {
  static thread_local void** items;
  static thread_local size_t count;
  static void* Alloc() { return items[--count]; }
  static void Free(void* p) { items[count++] = p; }
  static void Trim() {}
};
thread_local void** FloorStack::items = nullptr;
thread_local size_t FloorStack::count = 0;

// --- the timed workload
// ------------------------------------------------------------

template <class A>
void Rounds(std::vector<void*>& ptrs, int rounds, std::mt19937_64& rng) {
  for (int r = 0; r < rounds; ++r) {
    unsigned char b = 0;
    for (void*& p : ptrs) {
      p = A::Alloc();
      *static_cast<unsigned char*>(p) = ++b;  // the user touches the object
    }
    std::shuffle(ptrs.begin(), ptrs.end(), rng);
    for (void* p : ptrs) A::Free(p);
  }
}

double Now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Process CPU time: unlike wall time, not inflated while other processes
// hold the cores (the machine is shared), though their cache traffic still
// counts.
double CpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// The calling thread's CPU time.
double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct Timing {
  double wall_ns;  // per pair
  double cpu_ns;   // per pair, all threads' CPU time
  // Per pair of one thread, its own CPU time: the least and the most
  // loaded thread (an imbalance shows here, not in the sum).
  double thread_cpu_min_ns;
  double thread_cpu_max_ns;
};

template <class A>
Timing TimeOnce(const Flags& f, int threads, size_t size, bool floor) {
  std::atomic<int> ready{0};
  std::atomic<int> warm_turn{0};  // --serial_warmup: whose warm-up runs
  std::atomic<bool> go{false};
  std::vector<double> thread_cpu(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::vector<void*> ptrs(f.objects);
      std::mt19937_64 rng(1234 + t);
      std::vector<unsigned char> floor_mem;
      std::vector<void*> floor_items;
      if (floor) {
        floor_mem.resize(size * f.objects);
        floor_items.resize(f.objects);
        for (int i = 0; i < f.objects; ++i)
          floor_items[i] = &floor_mem[i * size];
        FloorStack::items = floor_items.data();
        FloorStack::count = floor_items.size();
      }
      // --serial_warmup: one thread at a time, so that each thread's first
      // objects (carved in this round) are contiguous instead of interleaved
      // with the other threads' batch by batch.
      while (f.serial_warmup && warm_turn.load() != t) {
        std::this_thread::yield();
      }
      Rounds<A>(ptrs, 1, rng);  // warm-up, untimed
      warm_turn.fetch_add(1);
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      const double c0 = ThreadCpuSeconds();
      Rounds<A>(ptrs, f.rounds, rng);
      thread_cpu[t] = ThreadCpuSeconds() - c0;
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  const double start = Now();
  const double cpu_start = CpuSeconds();
  go.store(true, std::memory_order_release);
  for (auto& w : workers) w.join();
  const double elapsed = Now() - start;
  const double cpu = CpuSeconds() - cpu_start;
  const double pairs = double(threads) * f.objects * f.rounds;
  const double per_thread = double(f.objects) * f.rounds;
  const auto [lo, hi] =
      std::minmax_element(thread_cpu.begin(), thread_cpu.end());
  return {elapsed * 1e9 / pairs, cpu * 1e9 / pairs, *lo * 1e9 / per_thread,
          *hi * 1e9 / per_thread};
}

// --- RSS
// ---------------------------------------------------------------------------

size_t RssBytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  long pages = 0, rss = 0;
  if (f != nullptr) {
    if (std::fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = 0;
    std::fclose(f);
  }
  return static_cast<size_t>(rss) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

template <class A>
void RssOnce(const Flags& f, const std::string& label, size_t size) {
  const int threads = f.threads.back();
  std::vector<std::vector<void*>> ptrs(threads);
  for (auto& v : ptrs)
    v.assign(f.objects, nullptr);  // touched: in the baseline
  const size_t base = RssBytes();
  std::atomic<int> phase_done{0};
  std::atomic<int> phase{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (void*& p : ptrs[t]) {
        p = A::Alloc();
        std::memset(p, t + 1, size);
      }
      phase_done.fetch_add(1);
      while (phase.load() < 1) std::this_thread::yield();
      for (void* p : ptrs[t]) A::Free(p);
    });
  }
  while (phase_done.load() < threads) std::this_thread::yield();
  const size_t live = RssBytes();
  phase.store(1);
  for (auto& w : workers) w.join();  // caches handed back on thread exit
  const size_t freed = RssBytes();
  A::Trim();
  const size_t trimmed = RssBytes();
  const double payload = double(threads) * f.objects * size;
  std::printf(
      "rss %s %zu %d live_mb=%.1f payload_mb=%.1f overhead_pct=%.2f "
      "after_free_mb=%.1f after_trim_mb=%.1f\n",
      label.c_str(), size, threads, (live - base) / 1048576.0,
      payload / 1048576.0, ((live - base) / payload - 1) * 100,
      (double(freed) - double(base)) / 1048576.0,
      (double(trimmed) - double(base)) / 1048576.0);
}

// --- producer / consumer
// -------------------------------------------------------------

// The pools' bound: blocks are never unmapped without Trim(), so the bytes
// held at the end are the peak; carving happens only when the whole depot
// is empty, so the slots carved never exceed what is in flight plus every
// thread's cache plus one carved batch per producer.
template <class A>
void PrintPoolBound(const Flags& f, size_t batch) {
  if constexpr (requires { A::HeldBytes(); }) {
    auto& pool = A::pool();
    const size_t threads = f.producers + f.consumers;
    const size_t objects = f.in_flight + threads * batch +
                           threads * A::PerThreadCache() + f.producers * 256;
    const size_t blocks =
        (objects + pool.objects_per_block() - 1) / pool.objects_per_block() + 1;
    const double held = A::HeldBytes() / 1048576.0;
    const double bound = blocks * pool.block_size() / 1048576.0;
    std::printf(" pool_held_mb=%.2f bound_mb=%.2f bound_objects=%zu within=%d",
                held, bound, objects, held <= bound ? 1 : 0);
  }
}

template <class A>
void ProdConsOnce(const Flags& f, const std::string& label) {
  constexpr size_t kBatch = 256;
  const size_t max_batches = std::max<size_t>(1, f.in_flight / kBatch);
  std::mutex mu;
  std::condition_variable not_full, not_empty;
  std::deque<std::vector<void*>> queue;
  std::atomic<size_t> peak{0};
  std::atomic<bool> done{false};
  const size_t base = RssBytes();
  std::thread sampler([&] {
    while (!done.load()) {
      const size_t r = RssBytes();
      if (r > peak.load()) peak.store(r);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  const double start = Now();
  const double cpu_start = CpuSeconds();
  std::vector<std::thread> producers, consumers;
  for (int t = 0; t < f.producers; ++t) {
    producers.emplace_back([&, t] {
      std::vector<void*> batch;
      for (int i = t; i < f.objects; i += f.producers) {
        void* p = A::Alloc();
        *static_cast<unsigned char*>(p) = static_cast<unsigned char>(i);
        batch.push_back(p);
        if (batch.size() == kBatch || i + f.producers >= f.objects) {
          std::unique_lock<std::mutex> lock(mu);
          not_full.wait(lock, [&] { return queue.size() < max_batches; });
          queue.push_back(std::move(batch));
          batch.clear();
          not_empty.notify_one();
        }
      }
    });
  }
  for (int t = 0; t < f.consumers; ++t) {
    consumers.emplace_back([&] {
      for (;;) {
        std::vector<void*> batch;
        {
          std::unique_lock<std::mutex> lock(mu);
          not_empty.wait(lock, [&] { return !queue.empty(); });
          batch = std::move(queue.front());
          queue.pop_front();
          not_full.notify_one();
        }
        if (batch.empty()) break;  // end marker
        for (void* p : batch) A::Free(p);
      }
    });
  }
  for (auto& t : producers) t.join();
  {
    std::lock_guard<std::mutex> lock(mu);
    for (int t = 0; t < f.consumers; ++t) queue.emplace_back();  // end markers
    not_empty.notify_all();
  }
  for (auto& t : consumers) t.join();
  const double elapsed = Now() - start;
  const double cpu = CpuSeconds() - cpu_start;  // the RSS sampler's included
  done.store(true);
  sampler.join();
  const size_t r = RssBytes();
  if (r > peak.load()) peak.store(r);
  std::printf(
      "prodcons %s %d:%d %d ns_per_pair=%.2f cpu_ns=%.2f "
      "peak_rss_growth_mb=%.1f",
      label.c_str(), f.producers, f.consumers, f.objects,
      elapsed * 1e9 / f.objects, cpu * 1e9 / f.objects,
      (double(peak.load()) - double(base)) / 1048576.0);
  PrintPoolBound<A>(f, kBatch);
  std::printf("\n");
}

// --- dispatch
// ------------------------------------------------------------------------

template <class A>
void Run(const Flags& f, const std::string& label, size_t size, bool floor) {
  if (f.mode == "rss") {
    RssOnce<A>(f, label, size);
  } else if (f.mode == "prodcons") {
    ProdConsOnce<A>(f, label);
  } else {
    for (int threads : f.threads) {
      const Timing t = TimeOnce<A>(f, threads, size, floor);
      std::printf("time %s %zu %d %.3f cpu_ns=%.3f thread_cpu_ns=%.3f/%.3f\n",
                  label.c_str(), size, threads, t.wall_ns, t.cpu_ns,
                  t.thread_cpu_min_ns, t.thread_cpu_max_ns);
      std::fflush(stdout);
    }
  }
}

template <size_t kSize>
bool RunSized(const Flags& f, const std::string& label) {
  const std::string& a = f.alloc;
  if (a == "floor") {
    Run<FloorStack>(f, label, kSize, true);
  } else if (a == "pool") {
    Run<PoolAlloc<kSize>>(f, label, kSize, false);
  } else if (a == "pool-instance") {
    InstancePoolAlloc<kSize>::Init(f.pool_options);
    Run<InstancePoolAlloc<kSize>>(f, label, kSize, false);
  } else if (a == "direct" && kHaveDirect) {
    DirectAlloc::size = kSize;
    Run<DirectAlloc>(f, label, kSize, false);
  } else if (a == "naive") {
    Run<NaiveAlloc<kSize>>(f, label, kSize, false);
  } else if (a == "pmr") {
    Run<PmrAlloc<kSize>>(f, label, kSize, false);
#ifdef HAVE_BOOST_POOL
  } else if (a == "boost") {
    Run<BoostAlloc<kSize>>(f, label, kSize, false);
#endif
  } else if (a == "malloc") {
    MallocAlloc::size = kSize;
    Run<MallocAlloc>(f, label, kSize, false);
  } else {
    return false;
  }
  return true;
}

std::vector<int> ParseList(const std::string& s) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    out.push_back(std::atoi(s.substr(pos, comma - pos).c_str()));
    pos = comma + 1;
  }
  return out;
}

// Which malloc is really in place (LD_PRELOAD is easy to get wrong).
const char* DetectMalloc() {
  if (dlsym(RTLD_DEFAULT, "mi_malloc")) return "mimalloc";
  if (dlsym(RTLD_DEFAULT, "mallctl")) return "jemalloc";
  if (dlsym(RTLD_DEFAULT, "tc_malloc")) return "tcmalloc";
  if (dlsym(RTLD_DEFAULT, "scalable_malloc")) return "tbbmalloc";
  return "glibc";
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* name) -> const char* {
      const size_t n = std::strlen(name);
      return arg.compare(0, n, name) == 0 ? arg.c_str() + n : nullptr;
    };
    if (const char* v = value("--alloc="))
      f.alloc = v;
    else if (const char* v = value("--mode="))
      f.mode = v;
    else if (const char* v = value("--threads="))
      f.threads = ParseList(v);
    else if (const char* v = value("--size="))
      f.size = std::strtoul(v, nullptr, 10);
    else if (const char* v = value("--objects="))
      f.objects = std::atoi(v);
    else if (const char* v = value("--rounds="))
      f.rounds = std::atoi(v);
    else if (const char* v = value("--label="))
      f.label = v;
    else if (const char* v = value("--producers="))
      f.producers = std::atoi(v);
    else if (const char* v = value("--consumers="))
      f.consumers = std::atoi(v);
    else if (const char* v = value("--in_flight="))
      f.in_flight = std::atoi(v);
    else if (const char* v = value("--magazine="))
      f.pool_options.magazine_size = std::atoi(v);
    else if (const char* v = value("--empty_magazines="))
      f.pool_options.max_empty_magazines = std::atoi(v);
    else if (const char* v = value("--shards="))
      f.pool_options.depot_shards = std::atoi(v);
    else if (arg == "--serial_warmup")
      f.serial_warmup = true;
    else {
      std::fprintf(stderr, "unknown flag %s (see the comment in %s)\n", argv[i],
                   __FILE__);
      return 2;
    }
  }
  const std::string label = f.label.empty() ? f.alloc : f.label;
  std::printf("malloc %s\n", DetectMalloc());
  bool ok = false;
  switch (f.size) {
    case 16:
      ok = RunSized<16>(f, label);
      break;
    case 48:
      ok = RunSized<48>(f, label);
      break;
    case 64:
      ok = RunSized<64>(f, label);
      break;
    case 200:
      ok = RunSized<200>(f, label);
      break;
    case 256:
      ok = RunSized<256>(f, label);
      break;
    default:
      break;
  }
  if (!ok) {
    std::fprintf(
        stderr, "unsupported --alloc=%s or --size=%zu (16, 48, 64, 200, 256)\n",
        f.alloc.c_str(), f.size);
    return 2;
  }
  return 0;
}
