// A client call scope: context, request and response on one pooled arena
// (or from MessagePools), kept alive until a callback-API call completes.
//
//   arenarpc::ClientCall<EchoRequest, EchoResponse> call;   // pooled arena
//   call.request()->add_payload("hello");
//   call.context()->set_deadline(deadline);
//   stub->async()->Echo(call.context(), call.request(), call.response(),
//       call.Then([](const grpc::Status& status, EchoResponse* response) {
//         // runs on a gRPC thread; then everything is released
//       }));
//
//   // Reuse instead of an arena:
//   static arenarpc::MessagePool<EchoRequest> requests;
//   static arenarpc::MessagePool<EchoResponse> responses;
//   arenarpc::ClientCall<EchoRequest, EchoResponse> reused(requests,
//   responses);
//
//   // Blocking calls need no Then(): the scope frees everything when it ends.
//   arenarpc::ClientCall<EchoRequest, EchoResponse> blocking;
//   grpc::Status s = stub->Echo(blocking.context(), *blocking.request(),
//                               blocking.response());
//
//   // Async stubs (completion queue): keep the scope until Finish's tag;
//   // gRPC serializes the request at once and parses the response in place.
//   arenarpc::ClientCall<EchoRequest, EchoResponse> queued;
//   auto rpc = stub->PrepareAsyncEcho(queued.context(), *queued.request(),
//                                     &cq);
//   rpc->StartCall();
//   rpc->Finish(queued.response(), &status, tag);
//
// Then() moves the context, request and response into the callback it
// returns. The context is destroyed just before `done` runs, so `done`
// cannot read trailing metadata or the peer (docs/DESIGN_NOTES.md,
// "Clients: the context goes first"); the rest right after it, or with the
// callback if gRPC drops it unrun. The accessors keep their pointers after
// Then(); do not use them once the call may have completed.
//
// Thread safety: a ClientCall is used by one thread until Then(); `done`
// runs on a gRPC thread. Lifetime: pools passed in must outlive the call,
// including its callback: the messages go back right after `done` returns.
#ifndef ARENARPC_GRPC_CLIENT_H_
#define ARENARPC_GRPC_CLIENT_H_

#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>

#include <functional>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "arenarpc/arena.h"
#include "arenarpc/message_pool.h"

namespace arenarpc {

template <class Req, class Resp>
class ClientCall {
 public:
  // Request and response on one pooled arena.
  ClientCall() : owned_(std::make_unique<State>()), state_(owned_.get()) {
    state_->arena.emplace();
    state_->request = state_->arena->template Create<Req>();
    state_->response = state_->arena->template Create<Resp>();
  }
  // Request and response borrowed from pools (returned cleared).
  ClientCall(MessagePool<Req>& requests, MessagePool<Resp>& responses)
      : owned_(std::make_unique<State>()), state_(owned_.get()) {
    state_->pooled_request = requests.Acquire();
    state_->pooled_response = responses.Acquire();
    state_->request = state_->pooled_request.get();
    state_->response = state_->pooled_response.get();
  }
  ClientCall(ClientCall&&) noexcept = default;
  ClientCall& operator=(ClientCall&&) noexcept = default;

  ::grpc::ClientContext* context() const { return &*state_->context; }
  Req* request() const { return state_->request; }
  Resp* response() const { return state_->response; }
  // The call's arena (nullptr for pooled messages or with the kill switch):
  // put other per-call data there.
  google::protobuf::Arena* arena() const {
    return state_->arena.has_value() ? state_->arena->arena() : nullptr;
  }

  // The completion callback for the stub's async() method. `done` is called
  // as done(const grpc::Status&, Resp*); then everything is released. Call
  // Then() at most once.
  template <class Done>
  std::function<void(::grpc::Status)> Then(Done done) {
    static_assert(std::is_invocable_v<Done&, const ::grpc::Status&, Resp*>,
                  "done(const grpc::Status&, Resp*)");
    std::shared_ptr<State> state(std::move(owned_));
    return [state = std::move(state),
            done = std::move(done)](::grpc::Status status) mutable {
      state->context.reset();  // see the header comment
      done(status, state->response);
      state.reset();  // before gRPC destroys the callback, maybe much later
    };
  }

 private:
  struct State {
    // Destroyed last: it may refer to the call until then. Engaged until
    // the call completes.
    std::optional<::grpc::ClientContext> context{std::in_place};
    std::optional<ScopedArena> arena;
    PooledMessage<Req> pooled_request;
    PooledMessage<Resp> pooled_response;
    Req* request = nullptr;
    Resp* response = nullptr;
  };

  std::unique_ptr<State> owned_;  // null after Then()
  State* state_ = nullptr;
};

}  // namespace arenarpc

#endif  // ARENARPC_GRPC_CLIENT_H_
