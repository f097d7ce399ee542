// Per-call messages for async completion-queue servers (CallData style):
// the same modes, auto, shadow measurement, stats and kill switch as the
// sync and callback installs, a few lines per method.
//
//   // Once per method, before the server starts (reported like an install):
//   arenarpc::AsyncMethod<EchoRequest, EchoResponse> echo(
//       "arenarpc.echo.EchoService/Echo", arenarpc::AllocationMode::kAuto);
//
//   class CallData {  // gRPC's async greeter, with the messages pooled
//    public:
//     CallData(EchoService::AsyncService* service,
//              grpc::ServerCompletionQueue* cq,
//              arenarpc::AsyncMethod<EchoRequest, EchoResponse>* echo)
//         : messages_(echo->NewCall()), responder_(&ctx_) {
//       service->RequestEcho(&ctx_, messages_.request(), &responder_, cq, cq,
//                            this);
//     }
//     void Proceed() {   // the request tag: handle it
//       Handle(*messages_.request(), messages_.response());
//       responder_.Finish(*messages_.response(), grpc::Status::OK, this);
//     }
//     // The Finish tag (and AsyncNotifyWhenDone's, if used): delete this;
//     // the messages go back to their pools with it.
//    private:
//     // First, so it is destroyed last: gRPC holds the request pointer
//     // until the request tag (and parses into it again after a request
//     // that did not parse), the response until Finish's tag.
//     arenarpc::CallMessages<EchoRequest, EchoResponse> messages_;
//     grpc::ServerContext ctx_;  // one per call, never reused
//     grpc::ServerAsyncResponseWriter<EchoResponse> responder_;
//   };
//
// gRPC's async API parses straight into the caller's request object, so a
// call's messages are taken when its CallData is made (before the call
// exists) and given back when it is destroyed. A request that fails to parse
// is not delivered: gRPC requests again into the same object, so in arena
// mode the bytes such failed parses allocated stay on that call's request
// arena until the CallData is destroyed (at most the largest accepted
// message per failure; every mode is correct, only arena keeps them).
//
// Stats count a call when its messages are given back, so the messages of
// requests still posted when the server shuts down (one per posted
// RequestXxx, released with their CallData on the !ok tag) count too.
// A complete server in this shape: examples/echo_async_server.cc.
//
// Thread safety: AsyncMethod is thread-safe (NewCall from any thread);
// a CallMessages is used by one call at a time, like its CallData.
// Lifetime: an AsyncMethod's allocator is process-wide and never destroyed;
// a CallMessages must outlive every tag of its call (declare it first).
#ifndef ARENARPC_GRPC_ASYNC_H_
#define ARENARPC_GRPC_ASYNC_H_

#include <string_view>
#include <utility>

#include "arenarpc/grpc/install.h"

namespace arenarpc {

// A call's request and response, from an AsyncMethod; released (back to
// their pools, arenas, or the heap) when destroyed. Move-only.
template <class Req, class Resp>
class CallMessages {
 public:
  CallMessages() = default;
  explicit CallMessages(::grpc::MessageHolder<Req, Resp>* holder)
      : holder_(holder) {}
  CallMessages(CallMessages&& other) noexcept
      : holder_(std::exchange(other.holder_, nullptr)) {}
  CallMessages& operator=(CallMessages&& other) noexcept {
    if (this != &other) {
      Reset();
      holder_ = std::exchange(other.holder_, nullptr);
    }
    return *this;
  }
  CallMessages(const CallMessages&) = delete;
  CallMessages& operator=(const CallMessages&) = delete;
  ~CallMessages() { Reset(); }

  Req* request() { return holder_->request(); }
  Resp* response() { return holder_->response(); }
  // Frees the request early (every mode); request() is null afterwards.
  void FreeRequest() { holder_->FreeRequest(); }
  // Releases both messages now.
  void Reset() {
    if (holder_ != nullptr) std::exchange(holder_, nullptr)->Release();
  }

 private:
  ::grpc::MessageHolder<Req, Resp>* holder_ = nullptr;
};

// One unary method of an async service: where its calls' messages come
// from. Constructing it is the method's install: it is listed in stats
// (api "async") and reports itself in report().
template <class Req, class Resp>
class AsyncMethod {
 public:
  // `method`: "pkg.Service/Method", the method's gRPC name.
  AsyncMethod(std::string_view method, const ServerOptions& options) {
    auto [allocator, meter] =
        internal::AllocatorFor<Req, Resp>(options, method);
    allocator_ = allocator;
    report_ = internal::Served(method, ServerApi::kAsync,
                               EffectiveAllocationMode(options.mode), meter);
  }
  AsyncMethod(const AsyncMethod&) = delete;
  AsyncMethod& operator=(const AsyncMethod&) = delete;

  // The messages of one call (take them before RequestXxx).
  CallMessages<Req, Resp> NewCall() {
    // Not a window kAuto can time (internal::kCallNotTimed).
    internal::next_call_request_bytes = internal::kCallNotTimed;
    ::grpc::MessageHolder<Req, Resp>* holder = allocator_->AllocateMessages();
    internal::next_call_request_bytes = internal::kCallBytesAtRelease;
    return CallMessages<Req, Resp>(holder);
  }
  const MethodInstall& report() const { return report_; }

 private:
  ::grpc::MessageAllocator<Req, Resp>* allocator_ = nullptr;
  MethodInstall report_;
};

}  // namespace arenarpc

#endif  // ARENARPC_GRPC_ASYNC_H_
