// Per-call messages for async completion-queue servers (CallData style):
// the same modes, auto, shadow measurement, stats and kill switch as the
// sync and callback installs, a few lines per method (docs/ASYNC.md).
//
//   // Once per method, before the server starts (reported like an install):
//   arenarpc::AsyncMethod<EchoRequest, EchoResponse> echo(
//       "arenarpc.echo.EchoService/Echo", arenarpc::AllocationMode::kAuto);
//
//   class CallData {  // gRPC's async greeter, with the messages pooled
//    public:
//     CallData(EchoService::AsyncService* service,
//              grpc::ServerCompletionQueue* cq)
//         : messages_(echo.NewCall()), responder_(&ctx_) {
//       service->RequestEcho(&ctx_, messages_.request(), &responder_, cq, cq,
//                            this);
//     }
//     void Proceed() {          // the request tag
//       messages_.Arrived();    // kAuto: first, on the thread of NextTag
//       Handle(*messages_.request(), messages_.response());
//       responder_.Finish(*messages_.response(), grpc::Status::OK, this);
//       messages_.Answered();   // kAuto: after Finish, same thread
//     }
//     // The Finish tag: delete this; the messages go back with it.
//    private:
//     arenarpc::CallMessages<EchoRequest, EchoResponse> messages_;  // first
//     grpc::ServerContext ctx_;
//     grpc::ServerAsyncResponseWriter<EchoResponse> responder_;
//   };
//
//   // Each thread serving the queue, in place of cq.Next(&tag, &ok):
//   bool ok;
//   while (arenarpc::NextTag(&cq, &tag, &ok)) Handle(tag, ok);
//
// A call's messages are taken when its CallData is made and given back
// when it is destroyed. kAuto learns on the real calls only with the three
// lines (NextTag, Arrived(), Answered()); without them the method stays in
// its starting mode (docs/ASYNC.md). A complete server:
// examples/echo_async_server.cc.
//
// Thread safety: AsyncMethod is thread-safe (NewCall from any thread);
// a CallMessages is used by one call at a time, like its CallData.
// Lifetime: an AsyncMethod's allocator is process-wide and never destroyed;
// a CallMessages must outlive every tag of its call (declare it first).
#ifndef ARENARPC_GRPC_ASYNC_H_
#define ARENARPC_GRPC_ASYNC_H_

#include <grpcpp/completion_queue.h>
#include <grpcpp/support/status.h>

#include <string_view>
#include <utility>

#include "arenarpc/grpc/install.h"
#include "arenarpc/grpc/internal/shed.h"

namespace arenarpc {

// cq->Next(tag, ok), and for kAuto the start of a call's window: the
// thread's CPU clock is read before Next() while trials are out.
inline bool NextTag(::grpc::CompletionQueue* cq, void** tag, bool* ok) {
  internal::BeforeAsyncNext();
  return cq->Next(tag, ok);
}

template <class Req, class Resp>
class AsyncMethod;

// A call's request and response, from an AsyncMethod; released (back to
// their pools, arenas, or the heap) when destroyed. Move-only.
template <class Req, class Resp>
class CallMessages {
 public:
  CallMessages() = default;
  explicit CallMessages(::grpc::MessageHolder<Req, Resp>* holder)
      : holder_(holder) {}
  CallMessages(CallMessages&& other) noexcept { *this = std::move(other); }
  CallMessages& operator=(CallMessages&& other) noexcept {
    if (this != &other) {
      Reset();
      holder_ = std::exchange(other.holder_, nullptr);
      call_ = std::move(other.call_);
    }
    return *this;
  }
  ~CallMessages() { Reset(); }

  Req* request() { return holder_->request(); }
  Resp* response() { return holder_->response(); }
  // kAuto: the call's request tag came from the last NextTag on this
  // thread; call first thing when handling it (see the top of this file).
  void Arrived() { call_.Arrived(); }
  // kAuto: after Finish() (or FinishWithError) on the thread of Arrived():
  // `status` as given to it; a non-OK one is not learned from.
  void Answered(const ::grpc::Status& status = ::grpc::Status::OK) {
    if (holder_ == nullptr) return;
    call_.Answered(holder_->request(), *holder_->response(), status.ok());
  }
  // Frees the request early (every mode); request() is null afterwards.
  void FreeRequest() {
    if (holder_->request() != nullptr) {
      call_.BeforeFreeRequest(*holder_->request());
    }
    holder_->FreeRequest();
  }
  // Releases both messages now.
  void Reset() {
    if (holder_ == nullptr) return;
    const double start = call_.BeforeRelease();
    std::exchange(holder_, nullptr)->Release();
    call_.AfterRelease(start);
  }

 private:
  friend class AsyncMethod<Req, Resp>;
  CallMessages(::grpc::MessageHolder<Req, Resp>* holder,
               internal::AsyncCall call)
      : holder_(holder), call_(std::move(call)) {}

  ::grpc::MessageHolder<Req, Resp>* holder_ = nullptr;
  internal::AsyncCall call_;
};

// One unary method of an async service: where its calls' messages come
// from. Constructing it is the method's install (stats, report()).
template <class Req, class Resp>
class AsyncMethod {
 public:
  // `method`: "pkg.Service/Method", the method's gRPC name.
  AsyncMethod(std::string_view method, const ServerOptions& options)
      : shed_(internal::ShedCountersFor(method)) {
    auto choice =
        internal::AllocatorFor<Req, Resp>(options, method, ServerApi::kAsync);
    // Refused (another install of the method, other options): heap, as
    // gRPC serves it, and the report says why.
    allocator_ =
        choice.allocator != nullptr
            ? choice.allocator
            : DefaultMessageAllocator<Req, Resp>(AllocationMode::kHeap);
    metered_ = choice.metered;
    report_ = std::move(choice.report);
  }
  AsyncMethod(const AsyncMethod&) = delete;
  AsyncMethod& operator=(const AsyncMethod&) = delete;

  // The messages of one call (take them before RequestXxx).
  CallMessages<Req, Resp> NewCall() {
    // Inside another call's window (the next CallData made while handling
    // one): left out of it.
    const double excluded = internal::AsyncExclusionStart();
    internal::CallTiming timing;
    ::grpc::MessageHolder<Req, Resp>* holder =
        metered_ != nullptr ? metered_->AllocateAsync(&timing)
                            : allocator_->AllocateMessages();
    const double made_at =
        timing.method != nullptr ? internal::ThreadCpuNs() : 0;
    CallMessages<Req, Resp> call(
        holder, internal::AsyncCall(
                    metered_ != nullptr ? metered_->automatic() : nullptr,
                    timing, made_at));
    internal::AsyncExclusionEnd(excluded);
    return call;
  }
  const MethodInstall& report() const { return report_; }

  // True if the call's deadline has passed, so nobody waits for its
  // answer: then FinishWithError(*answer), DEADLINE_EXCEEDED (counted as
  // shed), and skip the handler. Cancellation is not checked.
  bool DeadlinePassed(const ::grpc::ServerContext& context,
                      ::grpc::Status* answer) {
    return internal::PastDeadline(context, shed_, answer);
  }

 private:
  ::grpc::MessageAllocator<Req, Resp>* allocator_ = nullptr;
  MeteredMessageAllocator<Req, Resp>* metered_ = nullptr;
  internal::ShedCounters* shed_ = nullptr;
  MethodInstall report_;
};

}  // namespace arenarpc

#endif  // ARENARPC_GRPC_ASYNC_H_
