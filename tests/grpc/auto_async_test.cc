// kAuto learning on the real calls of async completion-queue methods
// (arenarpc/grpc/async.h): with the user's lines (arenarpc::NextTag,
// CallMessages::Arrived and Answered) a call is timed from before the
// Next() that returned its request to after Finish(), plus its messages'
// making and release; without them the method learns on the measuring
// thread as before. A window that is not the call's own is lost (not
// observed); a call that did not end OK is not observed either (sync too).
// Own binary: kAuto's budget is process-wide, and these tests want every
// call timed (share 1.0).
#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "arenarpc/grpc/async.h"
#include "arenarpc/grpc/install.h"
#include "arenarpc/grpc/stats.h"
#include "echo_service.h"
#include "grpc/grpc_test_util.h"

namespace arenarpc {
namespace {

using echo::EchoRequest;
using echo::EchoResponse;
using echo::EchoService;
using testing::WaitFor;

using testing::MeasuredStatsOf;
using testing::RealCallsOptions;

using Method = AsyncMethod<EchoRequest, EchoResponse>;

// gRPC's async greeter, with or without the lines.
class CallData {
 public:
  CallData(EchoService::AsyncService* service, grpc::ServerCompletionQueue* cq,
           Method* method, bool lines)
      : service_(service),
        cq_(cq),
        method_(method),
        lines_(lines),
        messages_(method->NewCall()),
        responder_(&ctx_) {
    service_->RequestEcho(&ctx_, messages_.request(), &responder_, cq_, cq_,
                          this);
  }
  void Proceed(bool ok) {
    if (!ok || finishing_) {
      delete this;
      return;
    }
    if (lines_) messages_.Arrived();
    new CallData(service_, cq_, method_, lines_);  // left out of the window
    const EchoRequest& request = *messages_.request();
    EchoResponse* response = messages_.response();
    response->mutable_payload()->CopyFrom(request.payload());
    response->set_request_bytes(request.ByteSizeLong());
    finishing_ = true;
    responder_.Finish(*response, grpc::Status::OK, this);
    if (lines_) messages_.Answered();
  }

 private:
  EchoService::AsyncService* const service_;
  grpc::ServerCompletionQueue* const cq_;
  Method* const method_;
  const bool lines_;
  CallMessages<EchoRequest, EchoResponse> messages_;
  grpc::ServerContext ctx_;
  grpc::ServerAsyncResponseWriter<EchoResponse> responder_;
  bool finishing_ = false;
};

// An async server of one method, its queue served by one thread.
class AsyncEchoServer {
 public:
  AsyncEchoServer(const std::string& name, bool lines)
      : method_(name, RealCallsOptions()),
        queue_(
            [this, lines](EchoService::AsyncService* service,
                          grpc::ServerCompletionQueue* cq) {
              new CallData(service, cq, &method_, lines);
            },
            [lines](grpc::ServerCompletionQueue* cq) {
              void* tag;
              bool ok;
              while (lines ? NextTag(cq, &tag, &ok) : cq->Next(&tag, &ok)) {
                static_cast<CallData*>(tag)->Proceed(ok);
              }
            }) {}
  bool Call() {
    grpc::ClientContext context;
    EchoRequest request;
    echo::BuildEchoRequest(20, 1, &request);
    EchoResponse response;
    return queue_.stub().Echo(&context, request, &response).ok();
  }

 private:
  Method method_;
  testing::AsyncEchoQueue queue_;
};

// With the lines, calls one at a time: every window is the call's own, so
// the method settles on timed real calls alone, none measured on the
// measuring thread (the first call, made before the lines were seen, may
// have been sampled: not mixed in).
TEST(AutoAsyncTest, WithTheLinesSettlesOnTimedRealCalls) {
  const std::string method = "t.AsyncLines/Echo";
  AsyncEchoServer server(method, /*lines=*/true);
  for (int i = 0; i < 2000 && !MeasuredStatsOf(method).settled; ++i) {
    ASSERT_TRUE(server.Call());
  }
  // The settling call's release may still be under way (gRPC answers the
  // client before the Finish tag comes back).
  MeasuredMethodStats s;
  EXPECT_TRUE(WaitFor([&] {
    s = MeasuredStatsOf(method);
    return s.settled && s.settle_calls > 0;
  }));
  EXPECT_GT(s.timed_calls, 0u);
  EXPECT_EQ(s.lost_calls, 0u);
  EXPECT_EQ(s.failed_calls, 0u);
  EXPECT_EQ(s.side_samples, 0u);
  EXPECT_FALSE(s.callback_fallback);
  EXPECT_GT(s.samples, 0u);
  EXPECT_LE(s.samples, s.timed_calls);
  // Requests of one size: sized until 8 agree, then on 1 call in 8 at
  // random (src/grpc/request_sizes.h; the slack as in auto_callback_test).
  EXPECT_GE(s.sized_requests, 8u);
  EXPECT_LE(s.sized_requests, 12 + s.timed_calls / 4);
}

// Without the lines (plain cq->Next, no Arrived/Answered): today's
// learning on the measuring thread, no call timed.
TEST(AutoAsyncTest, WithoutTheLinesLearnsOnTheSideThread) {
  const std::string method = "t.AsyncPlain/Echo";
  AsyncEchoServer server(method, /*lines=*/false);
  EXPECT_TRUE(WaitFor([&] {
    EXPECT_TRUE(server.Call());
    return MeasuredStatsOf(method).side_samples >= 3;
  }));
  const MeasuredMethodStats s = MeasuredStatsOf(method);
  EXPECT_EQ(s.timed_calls, 0u);
  EXPECT_EQ(s.lost_calls, 0u);
}

// The same calls, driven by hand on one thread: a completion queue with an
// alarm gives NextTag a tag to return; the request is parsed in place as
// gRPC would. Each step's windows counted deterministically.
class AsyncWindowTest : public ::testing::Test {
 protected:
  AsyncWindowTest()
      : method_(
            std::string("t.AsyncWindow/") +
                ::testing::UnitTest::GetInstance()->current_test_info()->name(),
            RealCallsOptions()) {}
  ~AsyncWindowTest() override {
    cq_.Shutdown();
    void* tag;
    bool ok;
    while (cq_.Next(&tag, &ok)) {
    }
  }
  std::string name() const {
    return std::string("t.AsyncWindow/") +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }
  // One NextTag on this thread, returning an alarm's tag.
  void Next() {
    grpc::Alarm alarm;
    alarm.Set(&cq_, std::chrono::system_clock::now(), &alarm);
    void* tag = nullptr;
    bool ok = false;
    ASSERT_TRUE(NextTag(&cq_, &tag, &ok));
    ASSERT_EQ(tag, &alarm);
  }
  // A request arrived (parsed into the call's request, as gRPC does).
  static void Parse(CallMessages<EchoRequest, EchoResponse>& call) {
    EchoRequest request;
    echo::BuildEchoRequest(10, 1, &request);
    ASSERT_TRUE(call.request()->ParseFromString(request.SerializeAsString()));
  }
  // Handled and "finished": the response serialized, as Finish() does.
  static void Answer(CallMessages<EchoRequest, EchoResponse>& call) {
    call.response()->set_request_bytes(call.request()->ByteSizeLong() + 1);
    ASSERT_FALSE(call.response()->SerializeAsString().empty());
  }
  // A call with the lines in order: timed.
  void GoodCall() {
    auto call = method_.NewCall();
    Next();
    Parse(call);
    call.Arrived();
    Answer(call);
    call.Answered();
  }

  Method method_;
  grpc::CompletionQueue cq_;
};

TEST_F(AsyncWindowTest, TimedWhenTheWindowIsTheCallsOwn) {
  GoodCall();  // the lines are seen: trials from the next call on
  const MeasuredMethodStats before = MeasuredStatsOf(name());
  GoodCall();
  GoodCall();
  const MeasuredMethodStats s = MeasuredStatsOf(name());
  // Observed, or a reuse trial on a new pooled instance (left out).
  EXPECT_EQ(s.timed_calls + s.warming_calls,
            before.timed_calls + before.warming_calls + 2);
  EXPECT_EQ(s.lost_calls, 0u);
  EXPECT_EQ(s.samples, s.timed_calls);
}

// A window that is not the call's own is lost: counted, not observed.
TEST_F(AsyncWindowTest, AWindowNotTheCallsOwnIsLost) {
  GoodCall();
  GoodCall();
  const MeasuredMethodStats before = MeasuredStatsOf(name());
  ASSERT_EQ(before.lost_calls, 0u);
  {
    // Two calls arrived after one Next: the reading is the first's, not
    // the second's (the first, never answered, is a failed call).
    auto first = method_.NewCall();
    auto second = method_.NewCall();
    Next();
    first.Arrived();
    second.Arrived();
    Answer(second);
    second.Answered();
  }
  {
    // Another call's messages released between the Next and Arrived():
    // that Next's event was the other call's.
    auto other = method_.NewCall();
    auto call = method_.NewCall();
    Next();
    other.Reset();
    call.Arrived();
    Answer(call);
    call.Answered();
  }
  {
    // Arrived() on a thread that never ran NextTag.
    auto call = method_.NewCall();
    Next();
    std::thread([&] { call.Arrived(); }).join();
    Answer(call);
    call.Answered();
  }
  {
    // Answered() after another Next on the thread.
    auto call = method_.NewCall();
    Next();
    call.Arrived();
    Next();
    Answer(call);
    call.Answered();
  }
  const MeasuredMethodStats s = MeasuredStatsOf(name());
  EXPECT_EQ(s.lost_calls, 4u);
  EXPECT_EQ(s.failed_calls, 1u);
  EXPECT_EQ(s.timed_calls, before.timed_calls);
  EXPECT_EQ(s.samples, before.samples);
}

// A call answered with an error, or not answered, is not observed; a call
// that never came (released at shutdown) is not counted at all.
TEST_F(AsyncWindowTest, FailedAndUnarrivedCallsAreNotObserved) {
  GoodCall();
  const MeasuredMethodStats before = MeasuredStatsOf(name());
  {
    auto call = method_.NewCall();
    Next();
    call.Arrived();
    call.Answered(grpc::Status(grpc::StatusCode::CANCELLED, "gone"));
  }
  {
    auto call = method_.NewCall();
    Next();
    call.Arrived();  // never answered
  }
  {
    auto call = method_.NewCall();  // never came
  }
  const MeasuredMethodStats s = MeasuredStatsOf(name());
  EXPECT_EQ(s.failed_calls, before.failed_calls + 2);
  EXPECT_EQ(s.timed_calls, before.timed_calls);
  EXPECT_EQ(s.samples, before.samples);
  EXPECT_EQ(s.lost_calls, 0u);
}

// Sync: a call whose handler returns an error is timed but not observed.
class FailingEcho final : public EchoService::Service {
 public:
  grpc::Status Echo(grpc::ServerContext*, const EchoRequest*,
                    EchoResponse*) override {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "overloaded");
  }
};

TEST(AutoAsyncTest, SyncCallsThatFailAreNotObserved) {
  // Sync installs find the method by its gRPC name (the only method of
  // this binary so named).
  const std::string method = "arenarpc.echo.EchoService/Echo";
  FailingEcho service;
  const MethodInstall install = InstallSyncMethod<&EchoService::Service::Echo>(
      &service, RealCallsOptions(), method);
  ASSERT_TRUE(install.served) << install.reason;
  const testing::LocalEcho local = testing::StartLocalEcho(&service);
  ASSERT_NE(local.server, nullptr);
  for (int i = 0; i < 20; ++i) {
    grpc::ClientContext context;
    EchoRequest request;
    echo::BuildEchoRequest(10, 1, &request);
    EchoResponse response;
    EXPECT_EQ(local.stub->Echo(&context, request, &response).error_code(),
              grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  MeasuredMethodStats s;
  EXPECT_TRUE(WaitFor([&] {
    s = MeasuredStatsOf(method);
    return s.failed_calls >= 20;
  }));
  EXPECT_EQ(s.failed_calls, 20u);
  EXPECT_EQ(s.timed_calls, 0u);
  EXPECT_EQ(s.samples, 0u);
  local.server->Shutdown(std::chrono::system_clock::now());
}

}  // namespace
}  // namespace arenarpc
