// Internal: answering a call whose deadline passed, or one over
// ServerOptions::max_calls_in_flight, without parsing its request or
// running its handler (sync_handler.h, callback_limit.h, async.h; counted
// for stats.h). Cancellation is not checked: IsCancelled() polls the sync
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
  std::atomic<uint64_t> limit{0};
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

// A method's calls in flight, at most `max` (0: no limit).
class InFlightLimit {
 public:
  explicit InFlightLimit(int max) : max_(max) {}
  // True: the call goes on and Done() follows; false: over the limit,
  // counted in `shed`.
  bool Admit(ShedCounters* shed) {
    if (max_ <= 0 || in_flight_.fetch_add(1, std::memory_order_relaxed) < max_)
      return true;
    in_flight_.fetch_sub(1, std::memory_order_relaxed);
    shed->limit.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  void Done() {
    if (max_ > 0) in_flight_.fetch_sub(1, std::memory_order_relaxed);
  }

 private:
  const int max_;
  std::atomic<int> in_flight_{0};
};

// RESOURCE_EXHAUSTED: the answer to a call over the limit.
::grpc::Status OverLimitStatus();

}  // namespace arenarpc::internal

#endif  // ARENARPC_GRPC_INTERNAL_SHED_H_
