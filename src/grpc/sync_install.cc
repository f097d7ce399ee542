// What the sync adapter relies on in gRPC, checked when this file compiles
// (docs/DESIGN.md, "Sync services: the handler swap"): a gRPC that differs
// fails the build here rather than misbehaving.
#include <grpcpp/impl/rpc_service_method.h>
#include <grpcpp/impl/service_type.h>
#include <grpcpp/support/method_handler.h>

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "arenarpc/grpc/internal/sync_handler.h"
#include "arenarpc/internal/mutex.h"

namespace arenarpc::internal {
namespace {

using Methods =
    std::vector<std::unique_ptr<::grpc::internal::RpcServiceMethod>>;

// grpc::Service's private vector of methods: naming a private member in an
// explicit instantiation is allowed ([temp.spec.general]); the friend it
// defines hands the member pointer out.
using MethodsPtr = Methods(::grpc::Service::*);
MethodsPtr ServiceMethodsMember();
template <MethodsPtr kMember>
struct ServiceMethodsAccess {
  friend MethodsPtr ServiceMethodsMember() { return kMember; }
};
template struct ServiceMethodsAccess<&::grpc::Service::methods_>;

// RpcServiceMethod's handler, owned (the same way).
using HandlerPtr = std::unique_ptr<::grpc::internal::MethodHandler>(
    ::grpc::internal::RpcServiceMethod::*);
HandlerPtr MethodHandlerMember();
template <HandlerPtr kMember>
struct MethodHandlerAccess {
  friend HandlerPtr MethodHandlerMember() { return kMember; }
};
template struct MethodHandlerAccess<
    &::grpc::internal::RpcServiceMethod::handler_>;

static_assert(
    std::is_same_v<
        decltype(std::declval<::grpc::internal::RpcServiceMethod&>().handler()),
        ::grpc::internal::MethodHandler*> &&
        std::is_same_v<
            decltype(std::declval<::grpc::internal::RpcServiceMethod&>()
                         .api_type()),
            ::grpc::internal::RpcServiceMethod::ApiType>,
    "arenarpc's sync adapter: this gRPC's RpcServiceMethod differs from "
    "gRPC 1.51's (handler(), api_type())");
static_assert(
    requires(::grpc::internal::RpcServiceMethod & m,
             ::grpc::internal::MethodHandler* h) { m.SetHandler(h); },
    "arenarpc's sync adapter: RpcServiceMethod::SetHandler is missing");
static_assert(
    requires(const ::grpc::internal::MethodHandler::HandlerParameter& p,
             google::protobuf::MessageLite* rsp, ::grpc::Status& s) {
      ::grpc::internal::UnaryRunHandlerHelper(p, rsp, s);
      p.call->call();
      p.server_context;
      p.status;
    },
    "arenarpc's sync adapter: gRPC's UnaryRunHandlerHelper or "
    "HandlerParameter differ from gRPC 1.51's");

// Parked calls, sharded so that call threads rarely meet on a lock.
constexpr int kShards = 16;
struct Shard {
  Mutex mu;
  absl::flat_hash_map<const void*, ParkedCall> parked ABSL_GUARDED_BY(mu);
};
Shard* Shards() {
  static Shard* const shards = new Shard[kShards];
  return shards;
}
Shard& ShardOf(const void* call) {
  return Shards()[(reinterpret_cast<uintptr_t>(call) >> 6) % kShards];
}

}  // namespace

void ParkCall(const void* call, ParkedCall parked) {
  Shard& s = ShardOf(call);
  MutexLock lock(&s.mu);
  s.parked[call] = parked;
}

ParkedCall TakeCall(const void* call) {
  Shard& s = ShardOf(call);
  MutexLock lock(&s.mu);
  auto node = s.parked.extract(call);
  return node.empty() ? ParkedCall{} : node.mapped();
}

size_t ParkedHolders() {
  size_t n = 0;
  for (int i = 0; i < kShards; ++i) {
    MutexLock lock(&Shards()[i].mu);
    n += Shards()[i].parked.size();
  }
  return n;
}

std::unique_ptr<::grpc::internal::MethodHandler>& HandlerOf(
    ::grpc::internal::RpcServiceMethod* method) {
  return method->*MethodHandlerMember();
}

SyncSlot FindSyncSlot(::grpc::Service* service, std::string_view method,
                      bool callback) {
  SyncSlot slot;
  std::string wire_name = "/";  // gRPC's name: "/pkg.Service/Method"
  wire_name.append(method);
  Methods& methods = service->*ServiceMethodsMember();
  // A generic method leaves a null slot; the others keep their names.
  bool any_generic = false;
  for (std::unique_ptr<::grpc::internal::RpcServiceMethod>& m : methods) {
    if (m == nullptr) {
      any_generic = true;
      continue;
    }
    if (wire_name != m->name()) continue;
    using ApiType = ::grpc::internal::RpcServiceMethod::ApiType;
    if (m->method_type() != ::grpc::internal::RpcMethod::NORMAL_RPC) {
      slot.reason = "streamed unary (WithStreamedUnaryMethod)";
    } else if (m->api_type() == ApiType::ASYNC) {
      slot.reason =
          "async completion-queue method: take its messages from an "
          "arenarpc::AsyncMethod (arenarpc/grpc/async.h)";
    } else if (m->api_type() == ApiType::RAW) {
      slot.reason = "raw async method (ByteBuffer)";
    } else if (m->api_type() == ApiType::RAW_CALL_BACK) {
      slot.reason = "raw callback method (ByteBuffer)";
    } else if ((m->api_type() == ApiType::CALL_BACK) != callback) {
      slot.reason = callback ? "not a callback method"
                             : "callback method without a message allocator "
                               "hook";
    } else if (m->handler() == nullptr) {
      slot.reason = "no handler";
    } else {
      slot.method = m.get();
    }
    return slot;
  }
  slot.reason = any_generic ? "generic method (MarkMethodGeneric)"
                            : "not a method of this service";
  return slot;
}

}  // namespace arenarpc::internal
