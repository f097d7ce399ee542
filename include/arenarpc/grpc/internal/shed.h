// Internal: answering a call nobody waits for without parsing its request
// or running its handler (its deadline passed, or its client cancelled,
// before the adapter parsed it). Used by the sync adapter (sync_handler.h)
// and AsyncMethod::Unwanted (async.h); counts read by stats.h. Defined in
// src/grpc/shed.cc. Not a public API.
//
// Thread safety: every function may be called from any thread at any time.
// Lifetime: counters are never destroyed.
#ifndef ARENARPC_GRPC_INTERNAL_SHED_H_
#define ARENARPC_GRPC_INTERNAL_SHED_H_

#include <grpc/support/time.h>
#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

#include <atomic>
#include <cstdint>
#include <string_view>

namespace arenarpc::internal {

// A method's calls answered without being parsed, by reason.
struct ShedCounters {
  std::atomic<uint64_t> deadline{0};
  std::atomic<uint64_t> cancelled{0};
};
// The counters of `method` ("pkg.Service/Method"), made on first use.
ShedCounters* ShedCountersFor(std::string_view method);
// Reads only: nullptr if no install made them.
const ShedCounters* FindShedCounters(std::string_view method);

// True if `deadline` (a ServerContext's raw_deadline()) has passed. A call
// without a deadline costs a compare; one with a deadline, one read of the
// deadline's own clock (gRPC's server deadlines are monotonic).
inline bool DeadlinePassed(gpr_timespec deadline) {
  if (deadline.tv_sec == INT64_MAX) return false;  // gpr_inf_future
  return gpr_time_cmp(gpr_now(deadline.clock_type), deadline) >= 0;
}

// True if nobody waits for the call of `context`: its deadline passed
// (*answer: DEADLINE_EXCEEDED) or, if `check_cancelled`, its client
// cancelled (*answer: CANCELLED); counted in `counters`. `check_cancelled`
// only where ServerContext::IsCancelled() is valid (the sync API; async
// only after AsyncNotifyWhenDone's tag).
bool Unwanted(const ::grpc::ServerContextBase& context, bool check_cancelled,
              ShedCounters* counters, ::grpc::Status* answer);

}  // namespace arenarpc::internal

#endif  // ARENARPC_GRPC_INTERNAL_SHED_H_
