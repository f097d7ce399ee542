// Internal: answering a call whose deadline passed without parsing its
// request or running its handler (sync_handler.h, async.h; counted for
// stats.h). Cancellation is not checked: IsCancelled() polls the sync
// call's queue (28-44 us of CPU, docs/raw/overload/shed_check.md) and is
// not valid on the async API before AsyncNotifyWhenDone's tag.
// Thread-safe; counters are never destroyed.
#ifndef ARENARPC_GRPC_INTERNAL_SHED_H_
#define ARENARPC_GRPC_INTERNAL_SHED_H_

#include <grpc/support/time.h>
#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

#include <atomic>
#include <cstdint>
#include <string_view>

namespace arenarpc::internal {

// A method's calls answered without being parsed (or, where gRPC parsed
// them, without their handler), by reason.
struct ShedCounters {
  std::atomic<uint64_t> deadline{0};
};
// The counters of `method` ("pkg.Service/Method"), made on first use;
// Find: nullptr if no install made them.
ShedCounters* ShedCountersFor(std::string_view method);
const ShedCounters* FindShedCounters(std::string_view method);

// True if `deadline` (a ServerContext's raw_deadline(), monotonic) has
// passed: a compare without a deadline, else one clock read.
inline bool DeadlinePassed(gpr_timespec deadline) {
  if (deadline.tv_sec == INT64_MAX) return false;  // gpr_inf_future
  return gpr_time_cmp(gpr_now(deadline.clock_type), deadline) >= 0;
}

// *answer: DEADLINE_EXCEEDED, counted in `counters`.
void AnswerPastDeadline(ShedCounters* counters, ::grpc::Status* answer);

// True, with *answer set and counted, if the deadline of the call of
// `context` passed.
inline bool PastDeadline(const ::grpc::ServerContextBase& context,
                         ShedCounters* counters, ::grpc::Status* answer) {
  if (!DeadlinePassed(context.raw_deadline())) return false;
  AnswerPastDeadline(counters, answer);
  return true;
}

}  // namespace arenarpc::internal

#endif  // ARENARPC_GRPC_INTERNAL_SHED_H_
