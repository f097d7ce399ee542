// Internal: a sync (Svc::Service) unary method's handler, swapped in by
// install.h: it takes the call's messages from a grpc::MessageAllocator and
// calls the service's own virtual method (docs/DESIGN.md, "Sync services:
// the handler swap"). Thread safety: called from many threads at once; no
// per-call state of its own. Lifetime: owned by the method (grpc::Service).
#ifndef ARENARPC_GRPC_INTERNAL_SYNC_HANDLER_H_
#define ARENARPC_GRPC_INTERNAL_SYNC_HANDLER_H_

#include <grpc/byte_buffer.h>
#include <grpcpp/impl/rpc_service_method.h>
#include <grpcpp/impl/service_type.h>
#include <grpcpp/server_context.h>
#include <grpcpp/support/message_allocator.h>
#include <grpcpp/support/method_handler.h>
#include <grpcpp/support/proto_buffer_reader.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "arenarpc/grpc/internal/holders.h"
#include "arenarpc/grpc/internal/shed.h"
#include "arenarpc/internal/check.h"

namespace arenarpc::internal {

// Where `method` ("pkg.Service/Method") of `service` stands: `method` if it
// is unary, sync (or callback) with a handler that may be swapped, else
// why not. HandlerOf: its handler, owned.
struct SyncSlot {
  ::grpc::internal::RpcServiceMethod* method = nullptr;
  std::string reason;
};
SyncSlot FindSyncSlot(::grpc::Service* service, std::string_view method,
                      bool callback = false);
std::unique_ptr<::grpc::internal::MethodHandler>& HandlerOf(
    ::grpc::internal::RpcServiceMethod* method);

// A call parked from Deserialize to RunHandler (which gets no handler_data):
// its holder, request parsed, or the request's bytes. TakeCall: {} if none.
struct ParkedCall {
  void* holder = nullptr;
  grpc_byte_buffer* payload = nullptr;
};
void ParkCall(const void* call, ParkedCall parked);
ParkedCall TakeCall(const void* call);
size_t ParkedHolders();

// The request a sync method parses into, in a holder: when parsing fails,
// gRPC's UnaryDeserializeHelper destroys this, not the holder's message.
template <class Req>
struct ParseTarget {
  Req* message;
};

template <auto kMethod>
struct SyncMethodTraits;
template <class Svc, class Req, class Resp,
          ::grpc::Status (Svc::*kMethod)(::grpc::ServerContext*, const Req*,
                                         Resp*)>
struct SyncMethodTraits<kMethod> {
  using Service = Svc;
  using Request = Req;
  using Response = Resp;
};

// Serves kMethod (&Svc::Service::Method, a virtual: the user's override
// runs) with messages from `allocator`.
template <auto kMethod>
class SyncUnaryHandler final : public ::grpc::internal::MethodHandler {
  using Service = typename SyncMethodTraits<kMethod>::Service;
  using Req = typename SyncMethodTraits<kMethod>::Request;
  using Resp = typename SyncMethodTraits<kMethod>::Response;
  using Holder = CallHolder<Req, Resp>;

 public:
  SyncUnaryHandler(Service* service,
                   ::grpc::MessageAllocator<Req, Resp>* allocator,
                   ShedCounters* shed, int max_in_flight)
      : service_(service),
        allocator_(allocator),
        shed_(shed),
        limit_(max_in_flight) {}

  void* Deserialize(grpc_call* call, grpc_byte_buffer* req,
                    ::grpc::Status* status, void** /*handler_data*/) override {
    // The parse waits for RunHandler, which has the deadline, except where
    // interceptors may read what this returns.
    if (req != nullptr &&
        parse_.load(std::memory_order_relaxed) == kParseInRunHandler) {
      ParkCall(call, {nullptr, req});
      return nullptr;  // no interceptor reads it
    }
    Holder* holder = Parsed(req, status);
    if (holder == nullptr) return nullptr;
    ParkCall(call, {holder, nullptr});
    return holder->request();
  }

  void RunHandler(const HandlerParameter& param) override {
    LearnWhereToParse(param);
    const ParkedCall parked = TakeCall(param.call->call());
    auto* holder = static_cast<Holder*>(parked.holder);
    ::grpc::Status status = param.status;
    bool admitted = false;
    if (status.ok() && (holder != nullptr || parked.payload != nullptr) &&
        (PastDeadline(*param.server_context, shed_, &status) ||
         !(admitted = limit_.Admit(shed_)))) {
      // Nobody waits, or too many calls do: no parse (or no handler), only
      // the status.
      if (status.ok()) status = OverLimitStatus();  // not the deadline
      if (parked.payload != nullptr) grpc_byte_buffer_destroy(parked.payload);
    } else if (parked.payload != nullptr) {
      holder = Parsed(parked.payload, &status, admitted ? &limit_ : nullptr);
    }
    if (holder == nullptr && status.ok()) {
      status = ::grpc::Status(::grpc::StatusCode::INTERNAL,
                              "arenarpc: request missing");
    }
    if (status.ok()) {
      status = ::grpc::internal::CatchingFunctionHandler([&] {
        return (service_->*kMethod)(
            static_cast<::grpc::ServerContext*>(param.server_context),
            holder->request(), holder->response());
      });
    }
    // As gRPC's own handler: the request is freed before the response is
    // serialized (and sent: the helper waits), which reuses its memory.
    if (holder != nullptr) holder->RequestDone();
    ::grpc::internal::UnaryRunHandlerHelper(
        param,
        static_cast<google::protobuf::MessageLite*>(
            holder != nullptr ? holder->response() : nullptr),
        status);
    if (holder != nullptr) {
      // kAuto learns only from calls that ended OK (a failed, shed or
      // cancelled one skipped work, or waited).
      if (holder->Timed() &&
          (!status.ok() || param.server_context->IsCancelled())) {
        holder->Failed();
      }
      if (admitted) holder->set_limit(&limit_);  // ended by Release()
      holder->Release();
    }
  }

 private:
  // Where the request is parsed: in Deserialize until a call showed whether
  // there are interceptors (then for good once any server has some).
  enum : int { kParseUnknown, kParseInRunHandler, kParseInDeserialize };

  void LearnWhereToParse(const HandlerParameter& param) {
    const int seen = param.call->server_rpc_info() == nullptr
                         ? kParseInRunHandler
                         : kParseInDeserialize;
    int now = parse_.load(std::memory_order_relaxed);
    if (now != seen && now != kParseInDeserialize) {
      parse_.compare_exchange_strong(now, seen, std::memory_order_relaxed);
    }
  }

  // A holder (made, handled and released on this one thread: kAuto may
  // time it) with `req` (consumed) parsed into its request; null, the
  // holder released (ending its call in `limit`, if given) and *status
  // gRPC's own, if it does not parse.
  Holder* Parsed(grpc_byte_buffer* req, ::grpc::Status* status,
                 InFlightLimit* limit = nullptr) {
    sync_request_bytes =
        req == nullptr ? 0 : static_cast<double>(grpc_byte_buffer_length(req));
    ::grpc::MessageHolder<Req, Resp>* allocated =
        allocator_->AllocateMessages();
    ARENARPC_DCHECK(dynamic_cast<Holder*>(allocated) != nullptr,
                    "SyncUnaryHandler: a holder not made by arenarpc");
    sync_request_bytes = -1;
    auto* holder = static_cast<Holder*>(allocated);
    ParseTarget<Req> target{holder->request()};
    if (::grpc::internal::UnaryDeserializeHelper(req, status, &target)) {
      return holder;
    }
    holder->set_limit(limit);
    holder->Release();
    return nullptr;
  }

  Service* const service_;
  ::grpc::MessageAllocator<Req, Resp>* const allocator_;
  ShedCounters* const shed_;
  InFlightLimit limit_;
  std::atomic<int> parse_{kParseUnknown};
};

}  // namespace arenarpc::internal

namespace grpc {
// Parses into the holder's message with protobuf's own traits.
template <class Req>
class SerializationTraits<::arenarpc::internal::ParseTarget<Req>, void> {
 public:
  static Status Deserialize(ByteBuffer* buffer,
                            ::arenarpc::internal::ParseTarget<Req>* target) {
    return SerializationTraits<Req>::Deserialize(buffer, target->message);
  }
};
}  // namespace grpc

#endif  // ARENARPC_GRPC_INTERNAL_SYNC_HANDLER_H_
