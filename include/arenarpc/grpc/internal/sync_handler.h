// Internal: serving a sync (Svc::Service) unary method with arenarpc's
// allocators. The method keeps its place, its name, its type (unary) and
// its API (sync, gRPC's thread pool); only its handler is swapped for one
// that takes the call's messages from a grpc::MessageAllocator (the same
// allocators, holders, stats and measuring as the callback API) and calls
// the service's own virtual method. Why this way: docs/DESIGN.md, "Sync
// services: the mechanism". What it relies on in gRPC is checked when
// src/grpc/sync_install.cc compiles. Not a public API.
//
// Thread safety: gRPC calls a handler from many threads at once; the
// handler keeps no per-call state of its own (the holder is parked by call).
// Lifetime: the handler is owned by the method (grpc::Service), the
// allocator outlives both (never destroyed).
#ifndef ARENARPC_GRPC_INTERNAL_SYNC_HANDLER_H_
#define ARENARPC_GRPC_INTERNAL_SYNC_HANDLER_H_

#include <grpc/byte_buffer.h>
#include <grpcpp/impl/rpc_service_method.h>
#include <grpcpp/impl/service_type.h>
#include <grpcpp/server_context.h>
#include <grpcpp/support/message_allocator.h>
#include <grpcpp/support/method_handler.h>
#include <grpcpp/support/proto_buffer_reader.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "arenarpc/grpc/internal/counters.h"
#include "arenarpc/grpc/internal/holders.h"
#include "arenarpc/internal/check.h"

namespace arenarpc::internal {

// Where a method of `service` stands: `method` if it is sync and unary
// with a handler that may be swapped, else why not (src/grpc/sync_install.cc).
struct SyncSlot {
  ::grpc::internal::RpcServiceMethod* method = nullptr;
  std::string reason;
};
// `method`: "pkg.Service/Method".
SyncSlot FindSyncSlot(::grpc::Service* service, std::string_view method);

// A call's holder from Deserialize to RunHandler, by call (gRPC's sync
// server gives RunHandler no handler_data). ParkedHolders(): holders
// between the two now (0 when no call is in flight).
void ParkHolder(const void* call, void* holder);
void* TakeHolder(const void* call);
size_t ParkedHolders();

// The request a sync method parses into: a message that lives in a holder.
// gRPC's UnaryDeserializeHelper destroys its target when parsing fails;
// for this target that destroys nothing, and the holder is released whole.
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

// Serves kMethod (&Svc::Service::Method, a virtual, so the user's
// override runs) with messages from `allocator`.
template <auto kMethod>
class SyncUnaryHandler final : public ::grpc::internal::MethodHandler {
  using Service = typename SyncMethodTraits<kMethod>::Service;
  using Req = typename SyncMethodTraits<kMethod>::Request;
  using Resp = typename SyncMethodTraits<kMethod>::Response;
  // `allocator` is one of arenarpc's (install.h's AllocatorFor): its
  // holders are CallHolders.
  using Holder = CallHolder<Req, Resp>;

 public:
  SyncUnaryHandler(Service* service,
                   ::grpc::MessageAllocator<Req, Resp>* allocator)
      : service_(service), allocator_(allocator) {}

  void* Deserialize(grpc_call* call, grpc_byte_buffer* req,
                    ::grpc::Status* status, void** /*handler_data*/) override {
    // The holder may time the call (kAuto): Deserialize, the handler and
    // Release all run on this thread.
    sync_request_bytes =
        req == nullptr ? 0 : static_cast<double>(grpc_byte_buffer_length(req));
    ::grpc::MessageHolder<Req, Resp>* allocated =
        allocator_->AllocateMessages();
    ARENARPC_DCHECK(dynamic_cast<Holder*>(allocated) != nullptr,
                    "SyncUnaryHandler: a holder not made by arenarpc");
    Holder* holder = static_cast<Holder*>(allocated);
    sync_request_bytes = -1;
    ParseTarget<Req> target{holder->request()};
    if (::grpc::internal::UnaryDeserializeHelper(req, status, &target) ==
        nullptr) {
      holder->Release();  // the status is gRPC's own (as without arenarpc)
      return nullptr;
    }
    ParkHolder(call, holder);
    return holder->request();
  }

  void RunHandler(const HandlerParameter& param) override {
    auto* holder = static_cast<Holder*>(TakeHolder(param.call->call()));
    ::grpc::Status status = param.status;
    if (holder == nullptr) {
      // The request did not parse: answer with its status, run nothing.
      if (status.ok()) {
        status = ::grpc::Status(::grpc::StatusCode::INTERNAL,
                                "arenarpc: request missing");
      }
      ::grpc::internal::UnaryRunHandlerHelper(
          param, static_cast<google::protobuf::MessageLite*>(nullptr), status);
      return;
    }
    if (status.ok()) {
      status = ::grpc::internal::CatchingFunctionHandler([&] {
        return (service_->*kMethod)(
            static_cast<::grpc::ServerContext*>(param.server_context),
            holder->request(), holder->response());
      });
    }
    // As gRPC's own sync handler: the request is destroyed once the handler
    // returned, before the response is serialized, so serializing reuses
    // the memory the request just freed (kept until Release, the heap grew
    // per call: 1.12x plain gRPC's CPU in heap mode on the 126 KB echo,
    // 1.00x with it freed here; docs/raw/heap_mode/paired_cpu.txt).
    holder->RequestDone();
    // Sends and waits until sent: the response is serialized by then.
    ::grpc::internal::UnaryRunHandlerHelper(
        param, static_cast<google::protobuf::MessageLite*>(holder->response()),
        status);
    // kAuto learns only from calls that ended OK: a failed or cancelled
    // call (a deadline passed under overload) skips work the modes differ
    // in, or waited for it.
    if (holder->Timed() &&
        (!status.ok() || param.server_context->IsCancelled())) {
      holder->Failed();
    }
    holder->Release();
  }

 private:
  Service* const service_;
  ::grpc::MessageAllocator<Req, Resp>* const allocator_;
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
