// kAuto on the real calls of async completion-queue methods
// (arenarpc/grpc/async.h): with the user's lines (arenarpc::NextTag,
// CallMessages::Arrived and Answered) a call is timed from before the
// Next() that returned its request to after Finish(), plus its messages'
// making and release; without them the method stays in its starting mode
// (arena) and times nothing. A window that is not the call's own is lost;
// a call that did not end OK, or never came, is failed: neither is
// observed (sync calls that fail neither). Own binary: kAuto's budget is
// process-wide, and these tests want every call a trial (share 1.0).
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

// With the lines, calls one at a time: every window is the call's own
// (the next CallData, made inside it, is left out), so the method settles
// on timed calls, none lost.
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
    return s.decisions > 0;
  }));
  EXPECT_TRUE(s.settled);
  EXPECT_FALSE(s.untimed);
  // A decision observes at least min_calls (6) of each mode it kept.
  EXPECT_GE(s.timed_calls, 12u);
  EXPECT_EQ(s.lost_calls, 0u);
  EXPECT_EQ(s.failed_calls, 0u);
}

// Without the lines (plain cq->Next, no Arrived/Answered) a call's CPU
// cannot be told apart from the thread's other work: no trials, every call
// in arena, nothing timed, lost or failed.
TEST(AutoAsyncTest, WithoutTheLinesStaysOnArenaAndTimesNothing) {
  const std::string method = "t.AsyncPlain/Echo";
  const GrpcStats before = GetGrpcStats();
  {
    AsyncEchoServer server(method, /*lines=*/false);
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(server.Call());
  }  // shut down: every CallData's messages released
  const GrpcStats after = GetGrpcStats();
  auto calls = [&](AllocationMode m) {
    const int i = static_cast<int>(m);
    return after.modes[i].calls - before.modes[i].calls;
  };
  EXPECT_GE(calls(AllocationMode::kArena), 100u);
  EXPECT_EQ(calls(AllocationMode::kHeap), 0u);
  EXPECT_EQ(calls(AllocationMode::kReuse), 0u);
  const MeasuredMethodStats s = MeasuredStatsOf(method);
  EXPECT_EQ(s.mode, AllocationMode::kArena);
  EXPECT_EQ(s.decisions, 0u);
  EXPECT_EQ(s.timed_calls + s.warming_calls + s.lost_calls + s.failed_calls,
            0u);
}

// The same calls, driven by hand on one thread: a completion queue with an
// alarm gives NextTag a tag to return; the request is parsed in place as
// gRPC would. Each step's windows counted deterministically (a fresh method
// per test: its first call shows the lines, the next ones are trials).
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
  EXPECT_EQ(s.failed_calls, 0u);
}

// A window that is not the call's own is lost: counted, not observed. A
// trial that never arrived, or arrived and was never answered, is failed.
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
    // that Next's event was the other call's (the other, never arrived,
    // is a failed call).
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
  EXPECT_EQ(s.failed_calls, 2u);
  EXPECT_EQ(s.timed_calls, before.timed_calls);
  EXPECT_EQ(s.warming_calls, before.warming_calls);
}

// A call answered with an error, not answered, or that never came
// (released at shutdown) is failed: counted, not observed.
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
  EXPECT_EQ(s.failed_calls, before.failed_calls + 3);
  EXPECT_EQ(s.timed_calls, before.timed_calls);
  EXPECT_EQ(s.warming_calls, before.warming_calls);
  EXPECT_EQ(s.lost_calls, 0u);
}

// Sync: a call whose handler returns an error is a trial, not observed.
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
  EXPECT_EQ(s.timed_calls + s.warming_calls + s.lost_calls, 0u);
  local.server->Shutdown(std::chrono::system_clock::now());
}

}  // namespace
}  // namespace arenarpc
