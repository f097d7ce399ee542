#include "memory_trace.h"

#include <malloc.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "arenarpc/arena.h"
#include "arenarpc/grpc/stats.h"
#include "arenarpc/metrics.h"
#include "arenarpc/page_pool.h"

namespace arenarpc::corpus {
namespace {

struct Status {
  long rss_kib = 0;
  long hwm_kib = 0;
  long anon_kib = 0;
  long threads = 0;
};

Status ReadStatus() {
  Status s;
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return s;
  char line[256];
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    long v = 0;
    if (std::sscanf(line, "VmRSS: %ld", &v) == 1) s.rss_kib = v;
    if (std::sscanf(line, "VmHWM: %ld", &v) == 1) s.hwm_kib = v;
    if (std::sscanf(line, "RssAnon: %ld", &v) == 1) s.anon_kib = v;
    if (std::sscanf(line, "Threads: %ld", &v) == 1) s.threads = v;
  }
  std::fclose(f);
  return s;
}

void Line(FILE* out, double t) {
  const Status st = ReadStatus();
  const struct mallinfo2 mi = mallinfo2();
  const PagePoolStats pages = internal::DefaultPagePoolStats();
  const ArenaStats arenas = GetArenaStats();
  uint64_t idle = 0;
  uint64_t retained = 0;
  for (const NamedMessagePoolStats& p : GetMessagePoolStats()) {
    if (!p.used_by_grpc) continue;
    idle += p.stats.idle;
    retained += p.stats.retained_bytes;
  }
  const GrpcStats grpc = GetGrpcStats();
  std::fprintf(out,
               "%.2f %ld %ld %ld %ld  %zu %zu %zu %zu  %llu %llu %llu %llu "
               "%llu  %llu %llu  %llu %llu %llu",
               t, st.rss_kib, st.hwm_kib, st.anon_kib, st.threads,
               mi.arena >> 10, mi.uordblks >> 10, mi.fordblks >> 10,
               mi.hblkhd >> 10,
               static_cast<unsigned long long>(pages.bytes_held() >> 10),
               static_cast<unsigned long long>(pages.pages_in_use),
               static_cast<unsigned long long>(pages.pages_cached),
               static_cast<unsigned long long>(pages.pages_in_depot),
               static_cast<unsigned long long>(arenas.arenas_idle),
               static_cast<unsigned long long>(idle),
               static_cast<unsigned long long>(retained >> 10),
               static_cast<unsigned long long>(grpc.modes[0].calls),
               static_cast<unsigned long long>(grpc.modes[1].calls),
               static_cast<unsigned long long>(grpc.modes[2].calls));
  for (const AutoMethodStats& m : GetAutoMethodStats()) {
    if (m.timed_calls == 0) continue;
    std::fprintf(out, "  %s %s %d %llu %llu", m.method.c_str(),
                 std::string(AllocationModeName(m.mode)).c_str(),
                 m.settled ? 1 : 0,
                 static_cast<unsigned long long>(m.timed_calls),
                 static_cast<unsigned long long>(m.decisions));
  }
  std::fputc('\n', out);
  std::fflush(out);
}

}  // namespace

bool StartMemoryTrace(int period_ms, const std::string& path) {
  FILE* out = std::fopen(path.c_str(), "w");
  if (out == nullptr) return false;
  std::fprintf(out,
               "# t_s rss_kib hwm_kib anon_kib threads  malloc_sys_kib "
               "malloc_used_kib malloc_free_kib malloc_mmap_kib  "
               "pages_held_kib pages_in_use pages_cached pages_depot "
               "arenas_idle  pool_idle pool_retained_kib  calls_heap "
               "calls_arena calls_reuse  [method mode settled timed_calls "
               "decisions]...\n");
  const auto start = std::chrono::steady_clock::now();
  std::thread([out, period_ms, start] {
    for (;;) {
      const double t = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count();
      Line(out, t);
      std::this_thread::sleep_for(std::chrono::milliseconds(period_ms));
    }
  }).detach();
  return true;
}

}  // namespace arenarpc::corpus
