#include "arenarpc/grpc/internal/shed.h"

#include <grpcpp/support/byte_buffer.h>

#include <functional>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "arenarpc/internal/mutex.h"

namespace arenarpc::internal {
namespace {

using Bytes = ::grpc::ByteBuffer;

// A call over the limit's messages: none are made; gRPC's handler asks.
class NoMessages final : public ::grpc::MessageHolder<Bytes, Bytes> {
 public:
  NoMessages() {
    set_request(&unused_);
    set_response(&unused_);
  }
  void FreeRequest() override {}
  void Release() override {}

 private:
  Bytes unused_;
};

}  // namespace

void* OverLimitMark() {
  static auto* const mark = new NoMessages;
  return static_cast<::grpc::MessageHolder<Bytes, Bytes>*>(mark);
}

::grpc::internal::MethodHandler* OverLimitHandler() {
  static auto* const handler =
      new ::grpc::internal::CallbackUnaryHandler<Bytes, Bytes>(
          [](::grpc::CallbackServerContext* context, const Bytes*, Bytes*) {
            ::grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
            reactor->Finish(OverLimitStatus());
            return reactor;
          });
  return handler;
}

ShedCounters* ShedCountersFor(std::string_view method, bool make) {
  static Mutex mu;
  // Entries never move or die: handlers keep pointers to them.
  static auto* const methods ABSL_PT_GUARDED_BY(mu) =
      new std::map<std::string, ShedCounters, std::less<>>();
  MutexLock lock(&mu);
  if (!make) {
    const auto it = methods->find(method);
    return it == methods->end() ? nullptr : &it->second;
  }
  return &methods->try_emplace(std::string(method)).first->second;
}

void AnswerPastDeadline(ShedCounters* counters, ::grpc::Status* answer) {
  counters->deadline.fetch_add(1, std::memory_order_relaxed);
  *answer = ::grpc::Status(::grpc::StatusCode::DEADLINE_EXCEEDED,
                           "arenarpc: deadline passed before the call was "
                           "handled");
}

::grpc::Status OverLimitStatus() {
  return ::grpc::Status(::grpc::StatusCode::RESOURCE_EXHAUSTED,
                        "arenarpc: too many calls in flight");
}

}  // namespace arenarpc::internal
