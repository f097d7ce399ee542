// Internal: CPU clocks, in nanoseconds: the calling thread's (what a call or a
// measurement cost) and the whole process's (what budgets are shares of).
// Thread safety: any thread.
#ifndef ARENARPC_INTERNAL_CPU_CLOCK_H_
#define ARENARPC_INTERNAL_CPU_CLOCK_H_

#include <time.h>

namespace arenarpc::internal {

inline double CpuClockNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}
inline double ThreadCpuNs() { return CpuClockNs(CLOCK_THREAD_CPUTIME_ID); }
inline double ProcessCpuNs() { return CpuClockNs(CLOCK_PROCESS_CPUTIME_ID); }

}  // namespace arenarpc::internal

#endif  // ARENARPC_INTERNAL_CPU_CLOCK_H_
