// Internal: answering a call without parsing its request or running its
// handler, counted for stats.h: its deadline passed (sync_handler.h,
// async.h), or ServerOptions::max_calls_in_flight are in flight (sync, and
// callback through LimitedCallbackHandler). Cancellation is not checked:
// IsCancelled() polls the sync call's queue (docs/OPERATE.md, "Overload")
// and is not valid on the async API before AsyncNotifyWhenDone's tag.
// Thread safety: called from many threads at once; counters are never
// destroyed. Lifetime: a LimitedCallbackHandler is owned by its method
// (grpc::Service), like gRPC's handler.
#ifndef ARENARPC_GRPC_INTERNAL_SHED_H_
#define ARENARPC_GRPC_INTERNAL_SHED_H_

#include <grpc/byte_buffer.h>
#include <grpc/support/time.h>
#include <grpcpp/impl/codegen/server_callback_handlers.h>  // 1.51 and 1.56
#include <grpcpp/impl/rpc_service_method.h>
#include <grpcpp/server_context.h>
#include <grpcpp/support/message_allocator.h>
#include <grpcpp/support/status.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>

#include "arenarpc/internal/check.h"

namespace arenarpc::internal {

// A method's calls answered without being parsed (or, where gRPC parsed
// them, without their handler), by reason.
struct ShedCounters {
  std::atomic<uint64_t> deadline{0};
  std::atomic<uint64_t> limit{0};
};
// The counters of `method` ("pkg.Service/Method"), made on first use; with
// `make` false, null if there are none (a read adds nothing).
ShedCounters* ShedCountersFor(std::string_view method, bool make = true);

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
  int in_flight() const { return in_flight_.load(std::memory_order_relaxed); }

 private:
  const int max_;
  std::atomic<int> in_flight_{0};
};

// RESOURCE_EXHAUSTED: the answer to a call over the limit.
::grpc::Status OverLimitStatus();

template <class Req, class Resp>
class CallHolder;  // holders.h

// What Deserialize hands RunHandler for a call over the limit, and the
// handler that answers it RESOURCE_EXHAUSTED.
void* OverLimitMark();
::grpc::internal::MethodHandler* OverLimitHandler();

// gRPC's callback unary handler of a method, wrapped: a call arriving over
// the limit is answered before its messages are made or its request
// parsed; an admitted one counts until gRPC releases its messages.
template <class Req, class Resp>
class LimitedCallbackHandler final
    : public ::grpc::internal::MethodHandler,
      public ::grpc::MessageAllocator<Req, Resp> {
  using Inner = ::grpc::internal::CallbackUnaryHandler<Req, Resp>;

 public:
  LimitedCallbackHandler(std::unique_ptr<MethodHandler> inner,
                         ::grpc::MessageAllocator<Req, Resp>* allocator,
                         int max, ShedCounters* shed)
      : inner_(std::move(inner)),
        allocator_(allocator),
        limit_(max),
        shed_(shed) {
    static_cast<Inner*>(inner_.get())->SetMessageAllocator(this);
  }
  // gRPC's handler again, with the allocator this one wrapped.
  std::unique_ptr<MethodHandler> Unwrap() {
    static_cast<Inner*>(inner_.get())->SetMessageAllocator(allocator_);
    return std::move(inner_);
  }
  const InFlightLimit& limit() const { return limit_; }

  void* Deserialize(grpc_call* call, grpc_byte_buffer* req,
                    ::grpc::Status* status, void** handler_data) override {
    if (limit_.Admit(shed_)) {
      return inner_->Deserialize(call, req, status, handler_data);
    }
    grpc_byte_buffer_destroy(req);
    *handler_data = OverLimitMark();
    return nullptr;
  }
  void RunHandler(const HandlerParameter& param) override {
    (param.internal_data == OverLimitMark() ? OverLimitHandler() : inner_.get())
        ->RunHandler(param);
  }
  // The admitted call's messages, from the wrapped allocator (arenarpc's):
  // its holder ends the call when released.
  ::grpc::MessageHolder<Req, Resp>* AllocateMessages() override {
    ::grpc::MessageHolder<Req, Resp>* allocated =
        allocator_->AllocateMessages();
    using Holder = CallHolder<Req, Resp>;
    ARENARPC_DCHECK(dynamic_cast<Holder*>(allocated) != nullptr,
                    "LimitedCallbackHandler: a holder not made by arenarpc");
    auto* holder = static_cast<Holder*>(allocated);
    holder->set_limit(&limit_);
    return holder;
  }

 private:
  std::unique_ptr<MethodHandler> inner_;
  ::grpc::MessageAllocator<Req, Resp>* const allocator_;
  InFlightLimit limit_;
  ShedCounters* const shed_;
};

}  // namespace arenarpc::internal

#endif  // ARENARPC_GRPC_INTERNAL_SHED_H_
