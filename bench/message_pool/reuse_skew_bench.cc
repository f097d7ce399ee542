// Skewed-size reuse benchmark: T threads parse requests of which 99 % are
// ~10 KB and 1 % ~2 MB, in one of these modes (one mode per process, so
// that resident memory can be compared):
//
//   heap     a fresh message per request
//   scoped   a message on an arenarpc::ScopedArena
//   naive    one message per thread, parsed over and over (Clear-and-reuse:
//            keeps the capacity of the largest request it ever saw)
//   pool     arenarpc::MessagePool with its growth guard
//   pool_arena  MessagePool with MessagePoolOptions::arena_instances (its
//            instances on arenas even where it would put them on the heap;
//            the same as pool on protobuf before v22)
//   pool_inplace  MessagePool without large_inputs_on_arena: inputs above
//            the growth bound go into the (heap) instance, which is then
//            evicted (MessagePool before large inputs went on an arena;
//            pool on 3.21 is alike)
//   pool_protobuf  MessagePool, the caller parsing with protobuf's own
//            ParseFromString on the pooled message (not ParseFrom()): the
//            pool cannot see the input's size before the parse
//   pool_protobuf_off  pool_protobuf with unrouted_fresh_returns = 0 and
//            fresh_returns_at_start = 0 (heap instances from the first use,
//            never turned off: the pool before those options)
//   arena_naive  like naive, each message on its own long-lived protobuf
//            Arena (shows why MessagePool keeps instances on the heap)
//
// --shape=envelope parses RequestEnvelope, whose `body` is a proto3 field
// without has-bit (naive reuse rebuilds the body every time).
//
// Prints one JSON line: wall time, peak RSS, final RSS and the RSS samples.
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "arenarpc/arena.h"
#include "arenarpc/message_pool.h"
#include "trpc_bench.pb.h"

ABSL_FLAG(std::string, mode, "pool",
          "heap, scoped, naive, arena_naive, pool, pool_arena, pool_inplace, "
          "pool_protobuf or pool_protobuf_off");
ABSL_FLAG(std::string, shape, "request", "request or envelope");
ABSL_FLAG(int, threads, 4, "worker threads");
ABSL_FLAG(int, requests, 200000, "requests in total (all threads)");
ABSL_FLAG(int, small_docs, 11, "docs in a small request (~10 KB)");
ABSL_FLAG(int, large_docs, 2250, "docs in a large request (~2 MB)");
ABSL_FLAG(double, large_fraction, 0.01, "fraction of large requests");
ABSL_FLAG(int, sample_ms, 20, "RSS sampling period");
ABSL_FLAG(int, inflight, 32, "requests alive at once per thread");
ABSL_FLAG(bool, force_heap_instances, false,
          "pool modes: heap instances on every protobuf version (as on v22+), "
          "so the heap-instance paths can be measured on 3.21");

namespace {

using arenarpc::bench::Request;
using arenarpc::bench::RequestEnvelope;

double RssMiB() {
  std::ifstream statm("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return pages_resident * static_cast<double>(sysconf(_SC_PAGESIZE)) /
         1048576.0;
}

std::string MakeWire(const std::string& shape, int docs, int seed) {
  Request req;
  req.set_request_id("req-" + std::to_string(seed));
  req.set_user("user-" + std::to_string(seed * 7));
  for (int i = 0; i < docs; ++i) {
    auto* doc = req.add_candidates();
    doc->set_doc_id(seed * 100000 + i);
    doc->set_title("title of document " + std::to_string(i) +
                   " in a long enough string");
    doc->set_url("https://example.com/items/" + std::to_string(seed) + "/" +
                 std::to_string(i));
    for (int t = 0; t < 5; ++t)
      doc->add_tags("tag-" + std::to_string((i + t) % 97));
    for (int f = 0; f < 4; ++f) {
      auto* feature = doc->add_features();
      feature->set_id(i * 10 + f);
      feature->set_name("feature-name-" + std::to_string(f));
      for (int v = 0; v < 8; ++v)
        feature->add_values(static_cast<float>(v) * 0.5f);
      for (int a = 0; a < 3; ++a) {
        auto* kv = feature->add_attrs();
        kv->set_key("key" + std::to_string(a));
        kv->set_value("a value of twenty-four " + std::to_string(a));
      }
    }
  }
  if (shape == "envelope") {
    RequestEnvelope env;
    env.set_trace_id("trace-" + std::to_string(seed));
    *env.mutable_body() = req;
    return env.SerializeAsString();
  }
  return req.SerializeAsString();
}

// Parses and reads one request; returns a checksum.
template <class M>
int64_t Use(const M& m) {
  const Request* req;
  if constexpr (std::is_same_v<M, RequestEnvelope>) {
    req = &m.body();
  } else {
    req = &m;
  }
  int64_t sum = req->candidates_size();
  for (const auto& doc : req->candidates())
    sum += doc.doc_id() + doc.features_size();
  return sum;
}

template <class M>
arenarpc::MessagePool<M>& Pool() {
  static arenarpc::MessagePool<M> pool([] {
    const std::string mode = absl::GetFlag(FLAGS_mode);
    arenarpc::MessagePoolOptions o;
    o.arena_instances = mode == "pool_arena";
    o.large_inputs_on_arena = mode != "pool_inplace";
    if (mode == "pool_protobuf_off") {
      o.unrouted_fresh_returns = 0;
      o.fresh_returns_at_start = 0;
    }
    return o;
  }());
  return pool;
}

std::atomic<uint64_t> arena_bytes{0};  // arena_naive: SpaceAllocated at the end

// One thread's requests. Each request stays alive for the next `inflight`
// requests of the thread, like concurrent calls in a server.
template <class M>
int64_t Worker(const std::string& mode, int requests, int inflight,
               const std::function<const std::string&()>& next) {
  int64_t sum = 0;
  const size_t k = static_cast<size_t>(inflight);
  if (mode == "heap") {
    std::vector<std::unique_ptr<M>> ring(k);
    for (int i = 0; i < requests; ++i) {
      auto m = std::make_unique<M>();
      if (!m->ParseFromString(next())) std::abort();
      sum += Use(*m);
      ring[i % k] = std::move(m);
    }
  } else if (mode == "scoped") {
    std::vector<arenarpc::ScopedArena> ring(k);
    for (int i = 0; i < requests; ++i) {
      arenarpc::ScopedArena arena;
      M* m = arena.Create<M>();
      if (!m->ParseFromString(next())) std::abort();
      sum += Use(*m);
      ring[i % k] = std::move(arena);
    }
  } else if (mode == "naive") {
    std::vector<M> ring(k);  // each keeps the capacity of its largest input
    for (int i = 0; i < requests; ++i) {
      M& m = ring[i % k];
      if (!m.ParseFromString(next())) std::abort();  // Clear() + parse
      sum += Use(m);
    }
  } else if (mode == "arena_naive") {
    std::vector<std::unique_ptr<google::protobuf::Arena>> arenas(k);
    std::vector<M*> ring(k);
    for (size_t j = 0; j < k; ++j) {
      arenas[j] = std::make_unique<google::protobuf::Arena>();
      ring[j] = arenarpc::internal::CreateOnArena<M>(arenas[j].get());
    }
    for (int i = 0; i < requests; ++i) {
      M* m = ring[i % k];
      if (!m->ParseFromString(next())) std::abort();
      sum += Use(*m);
    }
    uint64_t bytes = 0;
    for (auto& a : arenas) bytes += a->SpaceAllocated();
    arena_bytes.fetch_add(bytes);
  } else if (mode.starts_with("pool")) {
    std::vector<arenarpc::PooledMessage<M>> ring(k);
    const bool own_parse = mode.starts_with("pool_protobuf");
    for (int i = 0; i < requests; ++i) {
      auto m = Pool<M>().Acquire();
      if (!(own_parse ? m->ParseFromString(next()) : m.ParseFrom(next()))) {
        std::abort();
      }
      sum += Use(*m);
      ring[i % k] = std::move(m);
    }
  } else {
    std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
    std::exit(2);
  }
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  arenarpc::internal::SetHeapInstancesForTest(
      absl::GetFlag(FLAGS_force_heap_instances));
  const std::string mode = absl::GetFlag(FLAGS_mode);
  const std::string shape = absl::GetFlag(FLAGS_shape);
  const int threads = absl::GetFlag(FLAGS_threads);
  const int per_thread = absl::GetFlag(FLAGS_requests) / threads;

  std::vector<std::string> small, large;
  for (int i = 0; i < 8; ++i)
    small.push_back(MakeWire(shape, absl::GetFlag(FLAGS_small_docs), i));
  for (int i = 0; i < 2; ++i)
    large.push_back(MakeWire(shape, absl::GetFlag(FLAGS_large_docs), 100 + i));
  const double rss_before = RssMiB();

  std::atomic<bool> done{false};
  std::vector<std::pair<double, double>> samples;  // (ms, MiB)
  const auto start = std::chrono::steady_clock::now();
  auto ms_since_start = [&] {
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now() - start)
        .count();
  };
  std::thread sampler([&] {
    while (!done.load()) {
      samples.emplace_back(ms_since_start(), RssMiB());
      std::this_thread::sleep_for(
          std::chrono::milliseconds(absl::GetFlag(FLAGS_sample_ms)));
    }
  });
  std::vector<std::thread> workers;
  std::atomic<int64_t> checksum{0};
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937 rng(t + 1);
      std::uniform_real_distribution<double> coin(0, 1);
      const double large_fraction = absl::GetFlag(FLAGS_large_fraction);
      std::function<const std::string&()> next = [&]() -> const std::string& {
        return coin(rng) < large_fraction ? large[rng() % large.size()]
                                          : small[rng() % small.size()];
      };
      const int inflight = absl::GetFlag(FLAGS_inflight);
      checksum +=
          shape == "envelope"
              ? Worker<RequestEnvelope>(mode, per_thread, inflight, next)
              : Worker<Request>(mode, per_thread, inflight, next);
    });
  }
  for (auto& w : workers) w.join();
  const double wall_ms = ms_since_start();
  done = true;
  sampler.join();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);

  std::printf(
      "{\"mode\":\"%s\",\"shape\":\"%s\",\"threads\":%d,\"requests\":%d,"
      "\"small_bytes\":%zu,\"large_bytes\":%zu,\"wall_ms\":%.1f,"
      "\"cpu_ms\":%.1f,"
      "\"rss_before_mib\":%.1f,\"peak_rss_mib\":%.1f,\"final_rss_mib\":%.1f,"
      "\"checksum\":%lld,\"samples\":[",
      mode.c_str(), shape.c_str(), threads, per_thread * threads,
      small[0].size(), large[0].size(), wall_ms,
      (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e3 +
          (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e3,
      rss_before, usage.ru_maxrss / 1024.0, RssMiB(),
      static_cast<long long>(checksum.load()));
  for (size_t i = 0; i < samples.size(); ++i) {
    std::printf("%s[%.0f,%.1f]", i ? "," : "", samples[i].first,
                samples[i].second);
  }
  std::printf("]");
  if (mode == "arena_naive") {
    std::printf(",\"arena_space_allocated_mib\":%.1f",
                arena_bytes.load() / 1048576.0);
  }
  if (mode.starts_with("pool")) {
    const arenarpc::MessagePoolStats ps = shape == "envelope"
                                              ? Pool<RequestEnvelope>().Stats()
                                              : Pool<Request>().Stats();
    std::printf(
        ",\"pool\":{\"acquisitions\":%llu,\"reuse_hits\":%llu,\"created\":%llu,"
        "\"evicted_by_guard\":%llu,\"rebuilt_garbage\":%llu,\"rebuilt_aged\":%"
        "llu,"
        "\"fresh_arena_returns\":%llu,\"large_on_arena\":%llu,"
        "\"unrouted_large\":%llu,"
        "\"kept_percent\":%llu,"
        "\"dropped_idle\":%llu,\"idle\":%llu,"
        "\"bound_bytes\":%llu,\"retained_bytes\":%llu}",
        (unsigned long long)ps.acquisitions, (unsigned long long)ps.reuse_hits,
        (unsigned long long)ps.created, (unsigned long long)ps.evicted_by_guard,
        (unsigned long long)ps.rebuilt_garbage,
        (unsigned long long)ps.rebuilt_aged,
        (unsigned long long)ps.fresh_arena_returns,
        (unsigned long long)ps.large_on_arena,
        (unsigned long long)ps.unrouted_large,
        (unsigned long long)ps.kept_percent,
        (unsigned long long)ps.dropped_idle, (unsigned long long)ps.idle,
        (unsigned long long)ps.bound_bytes,
        (unsigned long long)ps.retained_bytes);
  }
  std::printf("}\n");
  return 0;
}
