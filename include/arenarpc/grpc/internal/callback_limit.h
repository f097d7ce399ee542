// Internal: ServerOptions::max_calls_in_flight on the callback API. gRPC's
// handler of the method is wrapped: a call arriving over the limit is
// answered RESOURCE_EXHAUSTED before its messages are made or its request
// parsed; an admitted one counts until gRPC releases its messages (the
// call's end). Thread safety: called from many threads at once.
// Lifetime: owned by the method (grpc::Service), like gRPC's handler.
#ifndef ARENARPC_GRPC_INTERNAL_CALLBACK_LIMIT_H_
#define ARENARPC_GRPC_INTERNAL_CALLBACK_LIMIT_H_

#include <grpc/byte_buffer.h>
#include <grpcpp/impl/codegen/server_callback_handlers.h>  // 1.51 and 1.56
#include <grpcpp/impl/rpc_service_method.h>
#include <grpcpp/impl/service_type.h>
#include <grpcpp/support/message_allocator.h>

#include <memory>
#include <string_view>
#include <utility>

#include "arenarpc/grpc/internal/shed.h"
#include "arenarpc/grpc/internal/sync_handler.h"

namespace arenarpc::internal {

// What Deserialize hands RunHandler for a call over the limit, and the
// handler that answers it RESOURCE_EXHAUSTED (src/grpc/shed.cc).
void* OverLimitMark();
::grpc::internal::MethodHandler* OverLimitHandler();

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
  // The admitted call's messages, from the wrapped allocator.
  ::grpc::MessageHolder<Req, Resp>* AllocateMessages() override {
    return new Admitted(allocator_->AllocateMessages(), &limit_);
  }

 private:
  class Admitted final : public ::grpc::MessageHolder<Req, Resp> {
   public:
    Admitted(::grpc::MessageHolder<Req, Resp>* messages, InFlightLimit* limit)
        : messages_(messages), limit_(limit) {
      this->set_request(messages->request());
      this->set_response(messages->response());
    }
    void FreeRequest() override {
      messages_->FreeRequest();
      this->set_request(nullptr);
    }
    void Release() override {
      messages_->Release();
      limit_->Done();
      delete this;
    }

   private:
    ::grpc::MessageHolder<Req, Resp>* const messages_;
    InFlightLimit* const limit_;
  };

  std::unique_ptr<MethodHandler> inner_;
  ::grpc::MessageAllocator<Req, Resp>* const allocator_;
  InFlightLimit limit_;
  ShedCounters* const shed_;
};

// set(allocator) on the callback `method` ("pkg.Service/Method"; "": no
// limit) of `service`, its handler wrapped when `max` > 0 (unwrapped first:
// gRPC's setter casts the handler to its own type).
template <class Req, class Resp, class Set>
void SetCallbackAllocator(::grpc::Service* service, std::string_view method,
                          int max,
                          ::grpc::MessageAllocator<Req, Resp>* allocator,
                          Set set) {
  using Limited = LimitedCallbackHandler<Req, Resp>;
  ::grpc::internal::RpcServiceMethod* m =
      method.empty() ? nullptr : FindSyncSlot(service, method, true).method;
  if (m != nullptr) {
    if (auto* limited = dynamic_cast<Limited*>(m->handler())) {
      HandlerOf(m) = limited->Unwrap();
    }
  }
  set(allocator);
  if (m != nullptr && max > 0 &&
      dynamic_cast<::grpc::internal::CallbackUnaryHandler<Req, Resp>*>(
          m->handler()) != nullptr) {
    HandlerOf(m) = std::make_unique<Limited>(std::move(HandlerOf(m)), allocator,
                                             max, ShedCountersFor(method));
  }
}

}  // namespace arenarpc::internal

#endif  // ARENARPC_GRPC_INTERNAL_CALLBACK_LIMIT_H_
