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
//         : messages_(echo->NewCall()), responder_(&ctx_), echo_(echo) {
//       service->RequestEcho(&ctx_, messages_.request(), &responder_, cq, cq,
//                            this);
//     }
//     void Proceed() {   // the request tag: handle it
//       messages_.Arrived();    // kAuto: first, on the thread of NextTag
//       grpc::Status late;
//       if (echo_->DeadlinePassed(ctx_, &late)) {   // no handler
//         responder_.FinishWithError(late, this);
//         messages_.Answered(late);
//         return;
//       }
//       Handle(*messages_.request(), messages_.response());
//       responder_.Finish(*messages_.response(), grpc::Status::OK, this);
//       messages_.Answered();   // kAuto: after Finish, same thread
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
//     arenarpc::AsyncMethod<EchoRequest, EchoResponse>* echo_;
//   };
//
//   // Each thread serving the server's completion queue `cq`, in place of
//   // cq.Next(&tag, &ok):
//   {
//     void* tag;
//     bool ok;
//     while (arenarpc::NextTag(&cq, &tag, &ok)) {
//       // static_cast<CallData*>(tag)->Proceed(), or delete it
//     }
//   }
//
// gRPC's async API parses straight into the caller's request object, so a
// call's messages are taken when its CallData is made (before the call
// exists) and given back when it is destroyed. A request that fails to parse
// is not delivered: gRPC requests again into the same object, so in arena
// mode the bytes such failed parses allocated stay on that call's request
// arena until the CallData is destroyed (at most the largest accepted
// message per failure; every mode is correct, only arena keeps them).
//
// kAuto learns on the real calls with three lines: NextTag for every Next() of
// the queue, Arrived() first on the request tag, Answered() right after
// Finish(). gRPC parses the request inside the Next() that returns its tag and
// Finish() serializes the response on the calling thread, so the call's CPU is
// that thread's from before that Next() to after Finish(), plus the messages'
// making and release; NewCall() hands each call the mode the learner wants to
// try. A call is counted only if Arrived() runs on the thread whose last
// NextTag returned its tag (no other call's messages released there in
// between) and Answered() on that thread before its next Next(); other
// calls' messages made or released inside the window (the next CallData)
// are timed and left out. A call answered with a non-OK status
// (Answered(status)) or not answered is not counted. Without the lines the
// method stays in its starting mode (arena, or a decisions file's); if
// more than half of a window of 32 trials is not counted, it stops
// learning where it is (logged once).
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

#include <grpcpp/completion_queue.h>
#include <grpcpp/support/status.h>

#include <string_view>
#include <utility>

#include "arenarpc/grpc/install.h"
#include "arenarpc/grpc/internal/shed.h"

namespace arenarpc {

// cq->Next(tag, ok), and for kAuto the start of a call's window (see the
// top of this file): the thread's CPU clock is read before Next() while
// some async method hands out trials (a clock read; otherwise a few
// thread-local writes).
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
  CallMessages(CallMessages&& other) noexcept
      : holder_(std::exchange(other.holder_, nullptr)),
        call_(std::move(other.call_)) {}
  CallMessages& operator=(CallMessages&& other) noexcept {
    if (this != &other) {
      Reset();
      holder_ = std::exchange(other.holder_, nullptr);
      call_ = std::move(other.call_);
    }
    return *this;
  }
  CallMessages(const CallMessages&) = delete;
  CallMessages& operator=(const CallMessages&) = delete;
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
// from. Constructing it is the method's install: it is listed in stats
// (api "async") and reports itself in report().
template <class Req, class Resp>
class AsyncMethod {
 public:
  // `method`: "pkg.Service/Method", the method's gRPC name.
  AsyncMethod(std::string_view method, const ServerOptions& options) {
    auto choice = internal::AllocatorFor<Req, Resp>(options, method);
    if (choice.allocator == nullptr) {
      // Refused (another install of the method, other options): heap, as
      // gRPC serves it, and the report says why.
      allocator_ = DefaultMessageAllocator<Req, Resp>(AllocationMode::kHeap);
      report_ = internal::NotServed(method, std::move(choice.refused));
      return;
    }
    allocator_ = choice.allocator;
    if (auto* m = dynamic_cast<MeteredMessageAllocator<Req, Resp>*>(
            choice.allocator)) {
      metered_ = m;  // kAuto or shadow measurement
    }
    shed_ = internal::ShedCountersFor(method);
    report_ = internal::Served(method, ServerApi::kAsync,
                               EffectiveAllocationMode(options.mode),
                               choice.automatic);
  }
  AsyncMethod(const AsyncMethod&) = delete;
  AsyncMethod& operator=(const AsyncMethod&) = delete;

  // The messages of one call (take them before RequestXxx).
  CallMessages<Req, Resp> NewCall() {
    // Inside another call's window (the next CallData made while handling
    // one): left out of it.
    const double excluded = internal::AsyncExclusionStart();
    CallMessages<Req, Resp> call;
    if (metered_ == nullptr) {
      call = CallMessages<Req, Resp>(allocator_->AllocateMessages());
    } else {
      internal::CallTiming timing;
      ::grpc::MessageHolder<Req, Resp>* holder =
          metered_->AllocateAsync(&timing);
      const double made_at =
          timing.method != nullptr ? internal::ThreadCpuNs() : 0;
      call = CallMessages<Req, Resp>(
          holder, internal::AsyncCall(metered_->automatic(), timing, made_at));
    }
    internal::AsyncExclusionEnd(excluded);
    return call;
  }
  const MethodInstall& report() const { return report_; }

  // True if the call's deadline has passed, so nobody waits for its
  // answer: then *answer is DEADLINE_EXCEEDED (counted in stats as shed);
  // FinishWithError(*answer) and skip the handler. gRPC has parsed the
  // request by the time its tag arrives: what this saves is the handler
  // and the response. Cancellation is not checked (IsCancelled() is valid
  // on the async API only after AsyncNotifyWhenDone's tag).
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
