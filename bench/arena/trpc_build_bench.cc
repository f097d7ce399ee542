// Reproduces the tRPC arena guide's experiment: T threads x N tasks, each
// task builds a Request and a Response (~200 KB ByteSizeLong each) with many
// repeated nested fields and strings, then drops them. Modes run side by
// side, interleaved per repetition, so drift hits all modes alike:
//
//   heap       messages on the heap (new/delete per field)
//   arena      protobuf's default google::protobuf::Arena per task
//   arena_1mb  an Arena whose first 1 MB block is a reused per-thread buffer
//   scoped     arenarpc::ScopedArena (pooled arenas on pooled pages)
//   clear      plain Clear-and-reuse of one Request/Response per thread
//   pool       arenarpc::MessagePool (reuse with the growth guard)
//
// Link with tcmalloc (trpc_build_bench_tcmalloc) for the second column of
// the guide's table. trpc_build_bench_microstring (protobuf v32+) builds the
// same messages declared in edition 2024 with MicroString strings. Prints
// medians over --reps and ratios; --json for tools.
#include <google/protobuf/arena.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_split.h"
#include "arenarpc/arena.h"
#include "arenarpc/message_pool.h"
#include "arenarpc/page_pool.h"
// trpc_build_bench_microstring compiles this against the same messages
// generated with MicroString (bench/CMakeLists.txt).
#include "trpc_bench.pb.h"

ABSL_FLAG(int, threads, 4, "worker threads");
ABSL_FLAG(int, tasks, 500, "tasks per thread for the large messages");
ABSL_FLAG(int, small_tasks, 100000, "tasks per thread for the small messages");
ABSL_FLAG(int, reps, 7, "repetitions; the median is reported");
ABSL_FLAG(int, docs, 225, "docs per message in the large case (~200 KB)");
ABSL_FLAG(std::string, sizes, "large,small", "which cases: large, small");
ABSL_FLAG(std::string, modes, "heap,arena,arena_1mb,scoped,clear,pool",
          "modes to run");
ABSL_FLAG(std::string, label, "glibc", "allocator label for the output");
ABSL_FLAG(int, page_kib, 0, "arenarpc page size in KiB (0: the default)");
ABSL_FLAG(bool, json, false,
          "print one JSON object per case instead of tables");

namespace {

using arenarpc::bench::Doc;
using arenarpc::bench::Request;
using arenarpc::bench::Response;

// Fixed text so that message building, not random number generation, is
// what is measured.
const std::string kText =
    "the quick brown fox jumps over the lazy dog while the arena allocator "
    "hands out pages from a thread cache and nobody calls malloc at all";

std::string Text(int i, size_t len) {
  return kText.substr(static_cast<size_t>(i) % (kText.size() - len), len);
}

void FillDoc(int i, Doc* doc) {
  doc->set_doc_id(1000000 + i);
  doc->set_title(Text(i, 40));
  doc->set_url("https://example.com/items/" + Text(i * 7, 34));
  for (int t = 0; t < 5; ++t) doc->add_tags(Text(i + t, 12));
  for (int f = 0; f < 4; ++f) {
    auto* feature = doc->add_features();
    feature->set_id(i * 10 + f);
    feature->set_name(Text(i + f, 16));
    for (int v = 0; v < 8; ++v)
      feature->add_values(static_cast<float>(v) * 0.5f);
    for (int a = 0; a < 3; ++a) {
      auto* kv = feature->add_attrs();
      kv->set_key(Text(a, 8));
      kv->set_value(Text(i + a, 24));
    }
  }
  doc->set_score(i * 0.25);
}

// Builds both messages; returns their total ByteSizeLong (used, so the work
// cannot be optimised away).
size_t Build(int docs, Request* req, Response* rsp) {
  req->set_request_id("req-" + Text(docs, 20));
  req->set_user(Text(3, 18));
  for (int i = 0; i < 8; ++i) {
    auto* kv = req->add_context();
    kv->set_key(Text(i, 10));
    kv->set_value(Text(i * 3, 30));
  }
  for (int i = 0; i < docs; ++i) FillDoc(i, req->add_candidates());
  for (int i = 0; i < docs; ++i) req->add_filter_ids(i * 31);
  rsp->set_code(0);
  rsp->set_message("ok");
  for (int i = 0; i < docs; ++i) FillDoc(docs - i, rsp->add_results());
  for (int i = 0; i < 4; ++i) {
    auto* kv = rsp->add_debug();
    kv->set_key(Text(i, 6));
    kv->set_value(Text(i, 40));
  }
  return req->ByteSizeLong() + rsp->ByteSizeLong();
}

size_t Task(const std::string& mode, int docs) {
  if (mode == "heap") {
    Request req;
    Response rsp;
    return Build(docs, &req, &rsp);
  }
  if (mode == "arena") {
    google::protobuf::Arena arena;
    return Build(docs, arenarpc::internal::CreateOnArena<Request>(&arena),
                 arenarpc::internal::CreateOnArena<Response>(&arena));
  }
  if (mode == "arena_1mb") {
    static thread_local std::unique_ptr<char[]> block(new char[1 << 20]);
    google::protobuf::ArenaOptions options;
    options.initial_block = block.get();
    options.initial_block_size = 1 << 20;
    google::protobuf::Arena arena(options);
    return Build(docs, arenarpc::internal::CreateOnArena<Request>(&arena),
                 arenarpc::internal::CreateOnArena<Response>(&arena));
  }
  if (mode == "scoped") {
    arenarpc::ScopedArena arena;
    return Build(docs, arena.Create<Request>(), arena.Create<Response>());
  }
  if (mode == "clear") {
    static thread_local Request req;
    static thread_local Response rsp;
    req.Clear();
    rsp.Clear();
    return Build(docs, &req, &rsp);
  }
  if (mode == "pool") {
    static arenarpc::MessagePool<Request> requests;
    static arenarpc::MessagePool<Response> responses;
    auto req = requests.Acquire();
    auto rsp = responses.Acquire();
    return Build(docs, req.get(), rsp.get());
  }
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  std::exit(2);
}

// One repetition: all threads start together; wall time until all finish.
double RunOnce(const std::string& mode, int threads, int tasks, int docs,
               size_t* bytes) {
  std::barrier start(threads + 1);
  std::vector<size_t> sizes(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      start.arrive_and_wait();
      size_t total = 0;
      for (int i = 0; i < tasks; ++i) total += Task(mode, docs);
      sizes[t] = total;
    });
  }
  start.arrive_and_wait();
  const auto begin = std::chrono::steady_clock::now();
  for (auto& w : workers) w.join();
  const auto end = std::chrono::steady_clock::now();
  *bytes = sizes[0] / static_cast<size_t>(tasks) / 2;  // per message
  return std::chrono::duration<double, std::milli>(end - begin).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (const int kib = absl::GetFlag(FLAGS_page_kib); kib > 0) {
    arenarpc::ArenaOptions options;
    options.pages.page_size = static_cast<size_t>(kib) << 10;
    if (absl::Status s = arenarpc::SetGlobalArenaOptions(options); !s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 2;
    }
  }
  const int threads = absl::GetFlag(FLAGS_threads);
  const int reps = absl::GetFlag(FLAGS_reps);
  const std::vector<std::string> modes =
      absl::StrSplit(absl::GetFlag(FLAGS_modes), ',');
  const std::string label = absl::GetFlag(FLAGS_label);
  const bool json = absl::GetFlag(FLAGS_json);

  const std::vector<std::string> sizes =
      absl::StrSplit(absl::GetFlag(FLAGS_sizes), ',');
  bool over_cap = false;
  for (const std::string& size : sizes) {
    const bool large = size == "large";
    const int docs = large ? absl::GetFlag(FLAGS_docs) : 1;
    const int tasks =
        large ? absl::GetFlag(FLAGS_tasks) : absl::GetFlag(FLAGS_small_tasks);
    std::map<std::string, std::vector<double>> times;
    size_t bytes = 0;
    for (const auto& mode : modes) {  // warm-up
      RunOnce(mode, threads, tasks / 10 + 1, docs, &bytes);
    }
    for (int r = 0; r < reps; ++r) {
      for (const auto& mode : modes) {
        times[mode].push_back(RunOnce(mode, threads, tasks, docs, &bytes));
      }
    }
    std::map<std::string, double> median;
    for (const auto& mode : modes) median[mode] = Median(times[mode]);
    const arenarpc::PagePoolStats pool = arenarpc::PagePool::Default().Stats();
    const arenarpc::ArenaOptions options = arenarpc::GetGlobalArenaOptions();
    // The memory target: the pool holds no more than its depot cap
    // once the run is over. A breach fails the run (and the ctest smoke).
    const bool within_cap = pool.pages_cached * pool.page_size <=
                            options.pages.depot_capacity_bytes;
    over_cap = over_cap || !within_cap;
    if (json) {
      std::printf(
          "{\"allocator\":\"%s\",\"case\":\"%s\",\"bytes_per_message\":%zu,"
          "\"threads\":%d,\"tasks\":%d,\"reps\":%d,\"median_ms\":{",
          label.c_str(), size.c_str(), bytes, threads, tasks, reps);
      for (size_t i = 0; i < modes.size(); ++i) {
        std::printf("%s\"%s\":%.3f", i ? "," : "", modes[i].c_str(),
                    median[modes[i]]);
      }
      std::printf(
          "},\"pool_cached_bytes\":%llu,\"depot_cap_bytes\":%zu}\n",
          static_cast<unsigned long long>(pool.pages_cached * pool.page_size),
          options.pages.depot_capacity_bytes);
      continue;
    }
    std::printf(
        "\n### %s, %s messages (~%zu bytes ByteSizeLong each), %d threads x %d "
        "tasks, median of %d\n\n",
        label.c_str(), size.c_str(), bytes, threads, tasks, reps);
    std::printf(
        "| mode | median ms | min ms | max ms | vs heap | vs arena | vs scoped "
        "|\n");
    std::printf("|---|---:|---:|---:|---:|---:|---:|\n");
    for (const auto& mode : modes) {
      const auto [lo, hi] =
          std::minmax_element(times[mode].begin(), times[mode].end());
      auto ratio = [&](const char* base) {
        return median.count(base) ? median[base] / median[mode] : 0.0;
      };
      std::printf("| %s | %.1f | %.1f | %.1f | %.2fx | %.2fx | %.2fx |\n",
                  mode.c_str(), median[mode], *lo, *hi, ratio("heap"),
                  ratio("arena"), ratio("scoped"));
    }
    std::printf("\n(ratios > 1 mean faster than the baseline)\n");
    std::printf(
        "page pool: %llu pages mapped and %llu unmapped since start, "
        "%llu thread-cache hits, %llu misses\n",
        static_cast<unsigned long long>(pool.os_pages_allocated),
        static_cast<unsigned long long>(pool.os_pages_released),
        static_cast<unsigned long long>(pool.cache_hits),
        static_cast<unsigned long long>(pool.cache_misses));
    std::printf(
        "page pool after the run: %llu pages cached (%.1f MiB), depot cap %.1f "
        "MiB: %s\n",
        static_cast<unsigned long long>(pool.pages_cached),
        pool.pages_cached * pool.page_size / 1048576.0,
        options.pages.depot_capacity_bytes / 1048576.0,
        within_cap ? "within the cap" : "OVER THE CAP");
  }
  return over_cap ? 1 : 0;
}
