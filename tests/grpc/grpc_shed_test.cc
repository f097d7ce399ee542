// Calls nobody waits for: a call whose deadline passed before the adapter
// parsed it is answered DEADLINE_EXCEEDED without its messages being made
// or its request parsed (sync API), or without its handler (async API,
// where gRPC has parsed it), and is counted per method in stats and
// Prometheus text.
//
// The sync server holds a marked call in gRPC's PreSynchronousRequest
// hook, which runs after Deserialize and before RunHandler (where the
// adapter now parses), until the call's deadline has passed on the server:
// the call then reaches the check with nobody waiting, in order, without
// racing a clock.
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/server_interceptor.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "arenarpc/grpc/async.h"
#include "arenarpc/grpc/install.h"
#include "arenarpc/grpc/internal/shed.h"
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
constexpr char kHoldKey[] = "x-test-hold";
constexpr auto kBound = std::chrono::seconds(30);  // bounds a hang only

// Holds calls marked kHoldKey until their deadline has passed.
class HoldingCallbacks final : public grpc::Server::GlobalCallbacks {
 public:
  void PreSynchronousRequest(grpc::ServerContext* context) override {
    if (context->client_metadata().count(kHoldKey) == 0) return;
    EXPECT_TRUE(WaitFor(
        [&] { return internal::DeadlinePassed(context->raw_deadline()); },
        kBound));
  }
  void PostSynchronousRequest(grpc::ServerContext*) override {}
};

// gRPC takes the callbacks once per process, before the first server.
const bool g_callbacks_set = [] {
  grpc::Server::SetGlobalCallbacks(new HoldingCallbacks);
  return true;
}();

// The echo, counting the handler's runs.
class CountingEcho final : public EchoService::Service {
 public:
  grpc::Status Echo(grpc::ServerContext*, const EchoRequest* request,
                    EchoResponse* response) override {
    runs.fetch_add(1);
    echo::FillResponse(*request, response);
    return grpc::Status::OK;
  }
  std::atomic<int> runs{0};
};

ServedMethodStats EchoStats() {
  for (const ServedMethodStats& m : GetServedMethodStats()) {
    if (m.method == kEcho) return m;
  }
  return {};
}

// Holders made, in any mode: a parsed request needs one.
uint64_t HoldersMade() {
  uint64_t n = 0;
  for (const GrpcModeStats& m : GetGrpcStats().modes)
    n += m.calls + m.in_flight;
  return n;
}

class SyncShedTest : public ::testing::TestWithParam<AllocationMode> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(g_callbacks_set);
    const InstallResult r = echo::InstallEchoServiceAllocators(
        &service_, ServerOptions(GetParam()));
    ASSERT_TRUE(r.ok()) << r.ToString();
    local_ = testing::StartLocalEcho(&service_);
    ASSERT_NE(local_.server, nullptr);
    echo::BuildEchoRequest(/*scale=*/2, /*seed=*/1, &request_);
    // A call first: the adapter parses in Deserialize until a call showed
    // the server has no interceptors.
    grpc::ClientContext warm;
    EchoResponse response;
    ASSERT_TRUE(local_.stub->Echo(&warm, request_, &response).ok());
    ASSERT_EQ(service_.runs.load(), 1);
  }

  // The call after `before` and `holders` were read was answered and
  // counted, with no messages made (so no parse) and no handler run. The
  // server goes on after the client gave up: waits until it answered.
  void ExpectAnsweredUnparsed(const ServedMethodStats& before,
                              uint64_t holders) {
    ASSERT_TRUE(WaitFor([&] {
      return EchoStats().shed_deadline > before.shed_deadline ||
             service_.runs.load() > 1;
    }));
    EXPECT_EQ(EchoStats().shed_deadline, before.shed_deadline + 1);
    EXPECT_EQ(service_.runs.load(), 1) << "the handler ran";
    EXPECT_EQ(HoldersMade(), holders) << "the request was parsed";
  }

  CountingEcho service_;
  testing::LocalEcho local_;
  EchoRequest request_;
};

TEST_P(SyncShedTest, CallPastItsDeadlineIsAnsweredUnparsed) {
  const ServedMethodStats before = EchoStats();
  const uint64_t holders = HoldersMade();
  grpc::ClientContext context;
  context.AddMetadata(kHoldKey, "deadline");
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(300));
  EchoResponse response;
  const grpc::Status s = local_.stub->Echo(&context, request_, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  ExpectAnsweredUnparsed(before, holders);

  // Still serving, and the answer is counted in Prometheus text.
  grpc::ClientContext next;
  EXPECT_TRUE(local_.stub->Echo(&next, request_, &response).ok());
  const std::string text = RenderPrometheusStats();
  EXPECT_NE(text.find(std::string("arenarpc_grpc_shed_calls_total{method=\"") +
                      kEcho + "\",reason=\"deadline\"} " +
                      std::to_string(EchoStats().shed_deadline)),
            std::string::npos)
      << text;
}

INSTANTIATE_TEST_SUITE_P(Modes, SyncShedTest, testing::AllModes(),
                         testing::ModeTestName);

// Counts the calls whose interceptors saw a parsed request
// (POST_RECV_MESSAGE) and those that saw none.
std::atomic<int> g_parsed_seen{0};
std::atomic<int> g_unparsed_seen{0};
class SeesRequest final : public grpc::experimental::Interceptor {
 public:
  void Intercept(grpc::experimental::InterceptorBatchMethods* m) override {
    if (m->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::POST_RECV_MESSAGE)) {
      const auto* request =
          static_cast<const EchoRequest*>(m->GetRecvMessage());
      (request != nullptr && request->payload_size() > 0 ? g_parsed_seen
                                                         : g_unparsed_seen)
          .fetch_add(1);
    }
    m->Proceed();
  }
};
class SeesRequestFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo*) override {
    return new SeesRequest;
  }
};

// With interceptors, every call is parsed before them, as without
// arenarpc; a call past its deadline still skips its handler.
TEST(SyncShedInterceptedTest, InterceptorsSeeTheRequestAndTheHandlerIsSkipped) {
  CountingEcho service;
  ASSERT_TRUE(
      echo::InstallEchoServiceAllocators(&service, AllocationMode::kArena)
          .ok());
  int port = 0;
  std::unique_ptr<grpc::Server> server =
      testing::StartLocalServer(&service, &port, [](grpc::ServerBuilder& b) {
        std::vector<std::unique_ptr<
            grpc::experimental::ServerInterceptorFactoryInterface>>
            factories;
        factories.push_back(std::make_unique<SeesRequestFactory>());
        b.experimental().SetInterceptorCreators(std::move(factories));
      });
  ASSERT_NE(server, nullptr);
  auto stub = EchoService::NewStub(
      testing::NewTestChannel("127.0.0.1:" + std::to_string(port)));
  EchoRequest request;
  echo::BuildEchoRequest(/*scale=*/2, /*seed=*/1, &request);
  EchoResponse response;
  for (int i = 0; i < 3; ++i) {
    grpc::ClientContext context;
    ASSERT_TRUE(stub->Echo(&context, request, &response).ok());
  }
  const ServedMethodStats before = EchoStats();
  grpc::ClientContext context;
  context.AddMetadata(kHoldKey, "deadline");
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(300));
  EXPECT_EQ(stub->Echo(&context, request, &response).error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);
  ASSERT_TRUE(WaitFor([&] {
    return EchoStats().shed_deadline > before.shed_deadline ||
           service.runs.load() > 3;
  }));
  EXPECT_EQ(EchoStats().shed_deadline, before.shed_deadline + 1);
  EXPECT_EQ(service.runs.load(), 3) << "the handler ran";
  EXPECT_EQ(g_parsed_seen.load(), 4);
  EXPECT_EQ(g_unparsed_seen.load(), 0);
  server->Shutdown();
}

// Async: a call whose deadline passed before its CallData handled it (held
// as if its tag had waited in the queue). gRPC parsed it inside Next();
// AsyncMethod::DeadlinePassed saves the handler.
class AsyncCall {
 public:
  AsyncCall(EchoService::AsyncService* service, grpc::ServerCompletionQueue* cq,
            AsyncMethod<EchoRequest, EchoResponse>* method,
            std::atomic<int>* runs)
      : service_(service),
        cq_(cq),
        method_(method),
        runs_(runs),
        messages_(method->NewCall()),
        responder_(&ctx_) {
    service_->RequestEcho(&ctx_, messages_.request(), &responder_, cq_, cq_,
                          this);
  }

  // The request tag (ok: a call came), then the finish tag.
  void OnTag(bool ok) {
    if (!ok || answered_) {
      delete this;
      return;
    }
    answered_ = true;
    new AsyncCall(service_, cq_, method_, runs_);
    // A marked call is held until its deadline passed on the server (the
    // client's may pass first): as if its tag had waited in the queue.
    if (ctx_.client_metadata().count(kHoldKey) > 0) {
      EXPECT_TRUE(
          WaitFor([&] { return internal::DeadlinePassed(ctx_.raw_deadline()); },
                  kBound));
    }
    grpc::Status late;
    if (method_->DeadlinePassed(ctx_, &late)) {
      responder_.FinishWithError(late, this);
      return;
    }
    runs_->fetch_add(1);
    echo::FillResponse(*messages_.request(), messages_.response());
    responder_.Finish(*messages_.response(), grpc::Status::OK, this);
  }

 private:
  EchoService::AsyncService* const service_;
  grpc::ServerCompletionQueue* const cq_;
  AsyncMethod<EchoRequest, EchoResponse>* const method_;
  std::atomic<int>* const runs_;
  CallMessages<EchoRequest, EchoResponse> messages_;
  grpc::ServerContext ctx_;
  grpc::ServerAsyncResponseWriter<EchoResponse> responder_;
  bool answered_ = false;
};

uint64_t ShedDeadline(std::string_view method) {
  return internal::ShedCountersFor(method)->deadline.load();
}

// A call held past its deadline is answered DEADLINE_EXCEEDED without its
// handler and counted as shed for `name`; a call in time is served.
void ExpectHeldCallShed(AsyncMethod<EchoRequest, EchoResponse>* method,
                        std::string_view name) {
  std::atomic<int> runs{0};
  testing::AsyncEchoQueue queue(
      [&](EchoService::AsyncService* service, grpc::ServerCompletionQueue* cq) {
        new AsyncCall(service, cq, method, &runs);
      },
      [](grpc::ServerCompletionQueue* cq) {
        void* tag;
        bool ok;
        while (NextTag(cq, &tag, &ok)) static_cast<AsyncCall*>(tag)->OnTag(ok);
      });
  const uint64_t before = ShedDeadline(name);
  EchoRequest request;
  echo::BuildEchoRequest(/*scale=*/2, /*seed=*/1, &request);
  {
    grpc::ClientContext context;
    context.AddMetadata(kHoldKey, "deadline");
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::milliseconds(300));
    EchoResponse response;
    EXPECT_EQ(queue.stub().Echo(&context, request, &response).error_code(),
              grpc::StatusCode::DEADLINE_EXCEEDED);
  }
  ASSERT_TRUE(
      WaitFor([&] { return ShedDeadline(name) > before || runs.load() > 0; }));
  EXPECT_EQ(ShedDeadline(name), before + 1);
  EXPECT_EQ(runs.load(), 0) << "the handler ran";
  grpc::ClientContext context;
  EchoResponse response;
  EXPECT_TRUE(queue.stub().Echo(&context, request, &response).ok());
  EXPECT_EQ(runs.load(), 1);
}

TEST(AsyncShedTest, CallPastItsDeadlineSkipsTheHandler) {
  AsyncMethod<EchoRequest, EchoResponse> method(kEcho, AllocationMode::kArena);
  const ServedMethodStats before = EchoStats();
  ExpectHeldCallShed(&method, kEcho);
  EXPECT_EQ(EchoStats().shed_deadline, before.shed_deadline + 1);
}

// A refused install (the method installed before with other kAuto options)
// serves from the heap and sheds like a served one: it has shed counters.
TEST(AsyncShedTest, RefusedInstallShedsLikeAServedOne) {
  constexpr char kName[] = "arenarpc.echo.EchoService/EchoRefusedAsync";
  const ServerOptions first(AllocationMode::kAuto);
  ServerOptions other = first;
  other.automatic.recheck_after_s = first.automatic.recheck_after_s + 1;
  AsyncMethod<EchoRequest, EchoResponse> served(kName, first);
  AsyncMethod<EchoRequest, EchoResponse> refused(kName, other);
  ASSERT_TRUE(served.report().served);
  ASSERT_FALSE(refused.report().served) << refused.report().reason;
  ExpectHeldCallShed(&refused, kName);
}

// Reading stats is a getter: a served method none was shed of reads zeros
// and gets no shed counters (an unnamed, unlimited callback install makes
// none).
TEST(ShedStatsTest, ReadingStatsMakesNoCounters) {
  EchoService::CallbackService service;
  const InstallResult r = InstallMessageAllocators(
      &service, ServerOptions(AllocationMode::kArena),
      &EchoService::CallbackService::SetMessageAllocatorFor_Echo);
  ASSERT_TRUE(r.ok()) << r.ToString();
  const std::string name = internal::TypePairName<EchoRequest, EchoResponse>();
  ASSERT_EQ(internal::ShedCountersFor(name, /*make=*/false), nullptr);
  bool listed = false;
  for (const ServedMethodStats& m : GetServedMethodStats()) {
    if (m.method != name) continue;
    listed = true;
    EXPECT_EQ(m.shed_deadline, 0u);
    EXPECT_EQ(m.shed_limit, 0u);
  }
  EXPECT_TRUE(listed);
  EXPECT_EQ(internal::ShedCountersFor(name, /*make=*/false), nullptr)
      << "reading stats made counters";
}

}  // namespace
}  // namespace arenarpc
