// arenarpc_churn_bench: thread churn (docs/OPERATE.md, "Threads and plugins").
// --waves waves of --threads short-lived threads, each using two arenas,
// two pooled messages and objects from ObjectPool<T>::Default() and an
// instance (bench/reliability/churn_workload.h), all alive at once, then
// exiting. Prints, per wave, RSS and every pool gauge, and checks that from
// the first wave on nothing grows; at the end trims every pool (and the
// heap) and compares RSS with the pre-churn baseline.
//
//   arenarpc_churn_bench --threads=1000 --waves=10     # exit 0: all held
#include <malloc.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "churn_workload.h"
#include "echo_service.h"

ABSL_FLAG(int, threads, 1000, "threads per wave (all alive at once)");
ABSL_FLAG(int, waves, 10, "waves");

namespace {

double RssMib() {
  std::ifstream f("/proc/self/status");
  std::string key;
  while (f >> key) {
    if (key == "VmRSS:") {
      double kib = 0;
      f >> kib;
      return kib / 1024;
    }
  }
  return 0;
}

void Print(const char* label, const arenarpc::churn::Snapshot& s, double rss) {
  // The heap's bytes in use and mapped (glibc), to tell a leak from
  // allocator retention.
  const struct mallinfo2 mi = mallinfo2();
  std::printf("%-8s rss_mib %7.1f heap_in_use_kib %zu heap_mapped_kib %zu",
              label, rss, (mi.uordblks + mi.hblkhd) / 1024,
              (mi.arena + mi.hblkhd) / 1024);
  for (const auto& [name, v] : s.gauges)
    std::printf(" %s=%llu", name.c_str(), (unsigned long long)v);
  for (const auto& [name, v] : s.counters)
    std::printf(" %s=%llu", name.c_str(), (unsigned long long)v);
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int threads = absl::GetFlag(FLAGS_threads);
  const int waves = absl::GetFlag(FLAGS_waves);
  arenarpc::echo::EchoRequest filled;
  arenarpc::echo::BuildEchoRequest(/*scale=*/2, /*seed=*/7,
                                   &filled);  // ~2.6 KB
  arenarpc::churn::Pools pools(&filled);

  const double rss0 = RssMib();
  Print("baseline", arenarpc::churn::Take(pools), rss0);
  arenarpc::churn::Snapshot first;
  double rss_first = 0, rss_max = 0, heap_mapped_first = 0;  // MiB
  bool ok = true;
  for (int w = 1; w <= waves; ++w) {
    arenarpc::churn::RunWave(threads, &pools);
    const arenarpc::churn::Snapshot s = arenarpc::churn::Take(pools);
    const double rss = RssMib();
    const std::string label = "wave" + std::to_string(w);
    Print(label.c_str(), s, rss);
    if (w == 1) {
      first = s;
      rss_first = rss;
      const struct mallinfo2 mi = mallinfo2();
      heap_mapped_first = static_cast<double>(mi.arena + mi.hblkhd) / (1 << 20);
      continue;
    }
    rss_max = std::max(rss_max, rss);
    // Slack: one refill batch per thread of the wave (which thread maps a
    // batch depends on races; the depot's cap bounds it anyway).
    for (const std::string& d :
         arenarpc::churn::Diff(first, s, /*page_slack=*/16)) {
      std::printf("  GREW vs wave 1: %s\n", d.c_str());
      ok = false;
    }
  }
  // Give everything back, as idle trimming does, and compare with the start.
  pools.messages.Trim();
  arenarpc::PagePool::Default().Trim();
  arenarpc::ObjectPool<arenarpc::churn::Item>::Default().Trim();
  pools.objects.Trim();
  malloc_trim(0);
  const double rss_end = RssMib();
  Print("trimmed", arenarpc::churn::Take(pools), rss_end);
  // RSS may rise after wave 1 with no gauge moving: a page or block the
  // pools mapped in wave 1 becomes resident only when some later wave
  // first touches it. So RSS is checked against what the pools hold (fixed
  // since wave 1) plus the heap, not against wave 1's RSS.
  double held = 0;
  for (const auto& [name, v] : first.gauges) {
    if (name.ends_with("bytes_held"))
      held += static_cast<double>(v) / (1 << 20);
  }
  const double bound = rss0 + held + heap_mapped_first;
  const bool rss_bounded = rss_max <= bound;
  std::printf(
      "summary threads %d waves %d rss_baseline_mib %.1f rss_wave1_mib %.1f "
      "rss_max_later_waves_mib %.1f rss_bound_mib %.1f (baseline + pools' "
      "bytes held "
      "after wave 1 + heap mapped after wave 1) rss_after_trim_mib %.1f "
      "gauges_held %s "
      "rss_within_bound %s\n",
      threads, waves, rss0, rss_first, rss_max, bound, rss_end,
      ok ? "yes" : "NO", rss_bounded ? "yes" : "NO");
  return ok && rss_bounded ? 0 : 1;
}
