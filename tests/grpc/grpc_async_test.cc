// Async completion-queue servers: CallData in the shape of gRPC's async
// greeter, its messages from an AsyncMethod, in every mode; a request that
// does not parse (gRPC requests again into the same object), a call
// cancelled while its answer is delayed (AsyncNotifyWhenDone), shutdown with
// calls waiting. Every call's messages come back (stats prove it).
#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "arenarpc/grpc/async.h"
#include "arenarpc/grpc/client.h"
#include "arenarpc/grpc/stats.h"
#include "echo_service.h"
#include "grpc/grpc_test_util.h"

namespace arenarpc {
namespace {

using echo::EchoRequest;
using echo::EchoResponse;
using echo::EchoService;
using testing::WaitFor;

constexpr char kEcho[] = "arenarpc.echo.EchoService/Echo";
constexpr int kMaxReceiveBytes = 1 << 20;

// One call: requested, answered (after request.delay_ms() on an Alarm),
// finished; deleted once every tag it armed came back.
class CallData {
 public:
  CallData(EchoService::AsyncService* service, grpc::ServerCompletionQueue* cq,
           AsyncMethod<EchoRequest, EchoResponse>* method,
           std::atomic<int>* live)
      : service_(service),
        cq_(cq),
        method_(method),
        live_(live),
        messages_(method->NewCall()),
        responder_(&ctx_) {
    live_->fetch_add(1);
    ctx_.AsyncNotifyWhenDone(&done_tag_);
    service_->RequestEcho(&ctx_, messages_.request(), &responder_, cq_, cq_,
                          &request_tag_);
  }
  ~CallData() { live_->fetch_sub(1); }

  struct Tag {
    CallData* call;
    enum Kind { kRequest, kAlarm, kFinish, kDone } kind;
  };

  // Handles one tag from the queue; deletes the call when it is over.
  static void OnTag(void* tag, bool ok) {
    Tag* t = static_cast<Tag*>(tag);
    CallData* c = t->call;
    switch (t->kind) {
      case Tag::kRequest:
        if (!ok) {  // shutting down: no call came, no other tag is armed
          delete c;
          return;
        }
        c->started_ = true;
        new CallData(c->service_, c->cq_, c->method_, c->live_);
        if (c->messages_.request()->delay_ms() > 0) {
          c->alarm_.Set(
              c->cq_,
              std::chrono::system_clock::now() +
                  std::chrono::milliseconds(c->messages_.request()->delay_ms()),
              &c->alarm_tag_);
        } else {
          c->Answer();
        }
        break;
      case Tag::kAlarm:
        if (ok) {
          c->Answer();
        } else {
          c->finished_ = true;  // cancelled below: nothing to answer
        }
        break;
      case Tag::kFinish:
        c->finished_ = true;
        break;
      case Tag::kDone:
        c->done_ = true;
        // A cancelled call's delayed answer is dropped: its alarm's tag
        // comes back with ok = false.
        if (c->ctx_.IsCancelled() && !c->finished_) c->alarm_.Cancel();
        break;
    }
    if (c->started_ && c->finished_ && c->done_) delete c;
  }

 private:
  void Answer() {
    const EchoRequest& request = *messages_.request();
    EchoResponse* response = messages_.response();
    response->mutable_payload()->CopyFrom(request.payload());
    response->mutable_results()->CopyFrom(request.results());
    response->set_request_bytes(request.ByteSizeLong());
    responder_.Finish(*response, grpc::Status::OK, &finish_tag_);
  }

  EchoService::AsyncService* const service_;
  grpc::ServerCompletionQueue* const cq_;
  AsyncMethod<EchoRequest, EchoResponse>* const method_;
  std::atomic<int>* const live_;
  // Before the context and the responder: destroyed after them.
  CallMessages<EchoRequest, EchoResponse> messages_;
  grpc::ServerContext ctx_;
  grpc::ServerAsyncResponseWriter<EchoResponse> responder_;
  grpc::Alarm alarm_;
  Tag request_tag_{this, Tag::kRequest};
  Tag alarm_tag_{this, Tag::kAlarm};
  Tag finish_tag_{this, Tag::kFinish};
  Tag done_tag_{this, Tag::kDone};
  bool started_ = false;
  bool finished_ = false;
  bool done_ = false;
};

class AsyncServerTest : public ::testing::TestWithParam<AllocationMode> {
 protected:
  void SetUp() override {
    method_ = std::make_unique<AsyncMethod<EchoRequest, EchoResponse>>(
        kEcho, GetParam());
    queue_ = std::make_unique<testing::AsyncEchoQueue>(
        [this](EchoService::AsyncService* service,
               grpc::ServerCompletionQueue* cq) {
          new CallData(service, cq, method_.get(), &live_);
        },
        [](grpc::ServerCompletionQueue* cq) {
          void* tag;
          bool ok;
          while (cq->Next(&tag, &ok)) CallData::OnTag(tag, ok);
        },
        kMaxReceiveBytes);
  }
  void TearDown() override {
    Shutdown();
    EXPECT_EQ(live_.load(), 0);  // every CallData deleted
    const GrpcStats s = GetGrpcStats();
    for (const GrpcModeStats& m : s.modes) EXPECT_EQ(m.in_flight, 0u);
    EXPECT_EQ(DefaultMessagePool<EchoRequest>().Stats().in_use, 0u);
    EXPECT_EQ(DefaultMessagePool<EchoResponse>().Stats().in_use, 0u);
  }
  void Shutdown() { queue_->Shutdown(std::chrono::milliseconds(100)); }
  grpc::Status Call(const EchoRequest& request, EchoResponse* response,
                    grpc::ClientContext* context) {
    return queue_->stub().Echo(context, request, response);
  }

  std::unique_ptr<AsyncMethod<EchoRequest, EchoResponse>> method_;
  std::atomic<int> live_{0};
  std::unique_ptr<testing::AsyncEchoQueue> queue_;
};

TEST_P(AsyncServerTest, EchoesAndReportsTheMethod) {
  EXPECT_TRUE(method_->report().served);
  EXPECT_EQ(method_->report().api, ServerApi::kAsync);
  EXPECT_EQ(method_->report().mode, GetParam());
  for (uint32_t i = 0; i < 10; ++i) {
    EchoRequest request;
    echo::BuildEchoRequest(20, i, &request);
    EchoResponse response;
    grpc::ClientContext context;
    ASSERT_TRUE(Call(request, &response, &context).ok());
    std::string why;
    EXPECT_TRUE(echo::VerifyEchoResponse(request, response, &why)) << why;
  }
  bool listed = false;
  for (const ServedMethodStats& m : GetGrpcStats().methods) {
    listed |= m.method == kEcho && m.api == ServerApi::kAsync;
  }
  EXPECT_TRUE(listed);
  // kAuto (kRealCalls by default) never times an async call: its messages
  // are taken before the call exists, no window covers its parse.
  for (const MeasuredMethodStats& m : GetMeasuredMethodStats()) {
    if (m.method != kEcho) continue;
    EXPECT_EQ(m.timed_calls, 0u);
    EXPECT_EQ(m.lost_calls, 0u);
  }
}

// gRPC requests again into the same request object after bytes that do not
// parse; the next call on that CallData is answered correctly.
TEST_P(AsyncServerTest, AMalformedRequestThenAGoodOne) {
  const grpc::Status bad_status = testing::CallWithBytes(
      testing::NewTestChannel(queue_->target()), std::string("/") + kEcho,
      std::string("\x0a\x64\x61\x62\x63", 5));
  EXPECT_FALSE(bad_status.ok());
  EchoRequest request;
  echo::BuildEchoRequest(10, 3, &request);
  EchoResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(Call(request, &response, &context).ok());
  EXPECT_TRUE(echo::VerifyEchoResponse(request, response, nullptr));
}

// A request over the server's limit is refused by gRPC before it reaches
// the CallData (RESOURCE_EXHAUSTED); the next call is answered.
TEST_P(AsyncServerTest, AnOversizeRequestThenAGoodOne) {
  EchoRequest big;
  big.add_payload(std::string(kMaxReceiveBytes + 1024, 'x'));
  EchoResponse response;
  grpc::ClientContext big_context;
  EXPECT_EQ(Call(big, &response, &big_context).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  EchoRequest request;
  echo::BuildEchoRequest(10, 4, &request);
  grpc::ClientContext context;
  ASSERT_TRUE(Call(request, &response, &context).ok());
  EXPECT_TRUE(echo::VerifyEchoResponse(request, response, nullptr));
}

// The client's deadline passes while the answer waits on an alarm: the
// caller gets DEADLINE_EXCEEDED, the server's done tag cancels the alarm,
// and the call's messages come back (TearDown) before shutdown.
TEST_P(AsyncServerTest, ADeadlinePassingWhileTheAnswerWaits) {
  EchoRequest request;
  echo::BuildEchoRequest(5, 1, &request);
  request.set_delay_ms(120000);  // far beyond the wait below
  EchoResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(300));
  EXPECT_EQ(Call(request, &response, &context).error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);
  // Only the CallData waiting for the next call is left.
  EXPECT_TRUE(
      WaitFor([&] { return live_.load() == 1; }, std::chrono::seconds(20)));
}

// Calls cancelled while their answer waits on an alarm, then shutdown with
// more calls waiting: every call ends, every CallData and message is back.
TEST_P(AsyncServerTest, CancelledAndShutDownWithCallsWaiting) {
  constexpr int kCalls = 6;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::thread> clients;
  std::atomic<int> ended{0};
  for (int i = 0; i < kCalls; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    clients.emplace_back([&, i] {
      EchoRequest request;
      echo::BuildEchoRequest(5, i, &request);
      request.set_delay_ms(3000);
      EchoResponse response;
      grpc::Status s = Call(request, &response, contexts[i].get());
      EXPECT_FALSE(s.ok());
      ended.fetch_add(1);
    });
  }
  // Every call reached its CallData (one more waits for the next call).
  ASSERT_TRUE(WaitFor([&] { return live_.load() == kCalls + 1; }));
  for (int i = 0; i < kCalls / 2; ++i) contexts[i]->TryCancel();
  Shutdown();  // the others are cancelled by the server's shutdown
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(ended.load(), kCalls);
}

// The async stub side: ClientCall scopes (context, request and response on
// one pooled arena) kept until Finish's tag; gRPC parses each response in
// place into the scope's response.
TEST_P(AsyncServerTest, AsyncStubWithClientCallScopes) {
  constexpr int kCalls = 8;
  grpc::CompletionQueue client_cq;
  std::vector<std::unique_ptr<ClientCall<EchoRequest, EchoResponse>>> calls;
  std::vector<std::unique_ptr<grpc::ClientAsyncResponseReader<EchoResponse>>>
      readers;
  std::vector<grpc::Status> statuses(kCalls);
  for (int i = 0; i < kCalls; ++i) {
    calls.push_back(std::make_unique<ClientCall<EchoRequest, EchoResponse>>());
    echo::BuildEchoRequest(10, i, calls[i]->request());
    readers.push_back(queue_->stub().PrepareAsyncEcho(
        calls[i]->context(), *calls[i]->request(), &client_cq));
    readers[i]->StartCall();
    readers[i]->Finish(calls[i]->response(), &statuses[i],
                       reinterpret_cast<void*>(static_cast<intptr_t>(i)));
  }
  for (int n = 0; n < kCalls; ++n) {
    void* tag;
    bool ok;
    ASSERT_TRUE(client_cq.Next(&tag, &ok));
    ASSERT_TRUE(ok);
    const int i = static_cast<int>(reinterpret_cast<intptr_t>(tag));
    ASSERT_TRUE(statuses[i].ok()) << statuses[i].error_message();
    std::string why;
    EXPECT_TRUE(echo::VerifyEchoResponse(*calls[i]->request(),
                                         *calls[i]->response(), &why))
        << why;
    EXPECT_NE(calls[i]->response()->GetArena(), nullptr);
  }
  client_cq.Shutdown();
  void* tag;
  bool ok;
  while (client_cq.Next(&tag, &ok)) {
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, AsyncServerTest, testing::AllModes(),
                         testing::ModeTestName);

}  // namespace
}  // namespace arenarpc
