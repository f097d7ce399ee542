// The sync API (Svc::Service): what an install reports for each kind of
// service, and that a served sync method keeps every ServerContext feature,
// errors and exceptions, with the messages all returned. The per-mode bad
// input and faults (malformed, oversize, cancel, deadline, shutdown) are in
// grpc_e2e_test.cc, which runs every test on both APIs.
#include <grpc/support/log.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/server_interceptor.h>
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "arenarpc/grpc/install.h"
#include "arenarpc/grpc/stats.h"
#include "echo_service.h"
#include "grpc/grpc_test_util.h"

namespace arenarpc {
namespace {

using echo::EchoRequest;
using echo::EchoResponse;
using echo::EchoService;
using testing::EchoServer;
using testing::WaitFor;

constexpr char kEcho[] = "arenarpc.echo.EchoService/Echo";

const MethodInstall* Find(const InstallResult& r, std::string_view method) {
  for (const MethodInstall& m : r.methods()) {
    if (m.method == method) return &m;
  }
  return nullptr;
}

TEST(SyncInstallTest, AFinalSyncServiceIsServed) {
  echo::EchoSyncServiceImpl service;  // final, as gRPC's examples write it
  const InstallResult r =
      echo::InstallEchoServiceAllocators(&service, AllocationMode::kArena);
  EXPECT_TRUE(r.ok()) << r.ToString();
  EXPECT_EQ(r.served(), 1);
  EXPECT_EQ(r.unary_methods(), 1);
  const MethodInstall* m = Find(r, kEcho);
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(m->served);
  EXPECT_EQ(m->api, ServerApi::kSync);
  EXPECT_EQ(m->mode, AllocationMode::kArena);
  // The streaming method is named, as not served, and is not "unary".
  const MethodInstall* s = Find(r, "arenarpc.echo.EchoService/EchoStream");
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(s->served);
  EXPECT_FALSE(s->unary);
  EXPECT_NE(r.ToString().find("EchoStream (streaming"), std::string::npos)
      << r.ToString();
}

TEST(SyncInstallTest, InstallingTwiceReplacesTheFirstInstall) {
  echo::EchoSyncServiceImpl service;
  EXPECT_EQ(echo::InstallEchoServiceAllocators(&service, AllocationMode::kArena)
                .served(),
            1);
  EXPECT_EQ(echo::InstallEchoServiceAllocators(&service, AllocationMode::kReuse)
                .served(),
            1);
}

// gRPC log lines of a failed install ("arenarpc: nothing installed: ...").
std::atomic<int> g_install_errors{0};
void CountInstallErrors(gpr_log_func_args* args) {
  if (args->severity == GPR_LOG_SEVERITY_ERROR &&
      std::string_view(args->message).find("arenarpc: nothing installed") !=
          std::string_view::npos) {
    g_install_errors.fetch_add(1);
  }
}

// Each kind of method an install cannot serve: a failed result naming it
// and why, and one error line in gRPC's log (never a quiet 0).
template <class Service>
void ExpectNotServed(std::string_view why) {
  Service service;
  g_install_errors = 0;
  gpr_set_log_function(CountInstallErrors);
  const InstallResult r =
      echo::InstallEchoServiceAllocators(&service, AllocationMode::kArena);
  gpr_set_log_function(nullptr);
  EXPECT_EQ(g_install_errors.load(), 1);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.served(), 0);
  const MethodInstall* m = Find(r, kEcho);
  ASSERT_NE(m, nullptr);
  EXPECT_FALSE(m->served);
  EXPECT_NE(m->reason.find(why), std::string::npos) << m->reason;
  EXPECT_NE(std::string(r.status().message()).find(kEcho), std::string::npos)
      << r.status();
}

class StreamedUnaryEcho final
    : public EchoService::WithStreamedUnaryMethod_Echo<EchoService::Service> {
 public:
  grpc::Status StreamedEcho(
      grpc::ServerContext*,
      grpc::ServerUnaryStreamer<EchoRequest, EchoResponse>*) override {
    return grpc::Status::OK;
  }
};

TEST(SyncInstallTest, AsyncRawGenericAndStreamedMethodsAreNamedNotServed) {
  ExpectNotServed<EchoService::AsyncService>("async completion-queue");
  ExpectNotServed<EchoService::WithRawMethod_Echo<EchoService::Service>>(
      "raw async");
  ExpectNotServed<EchoService::WithGenericMethod_Echo<EchoService::Service>>(
      "generic");
  ExpectNotServed<
      EchoService::WithRawCallbackMethod_Echo<EchoService::Service>>(
      "raw callback");
  ExpectNotServed<StreamedUnaryEcho>("streamed unary");
}

// A service that mixes the APIs: the callback method through its setter.
TEST(SyncInstallTest, MixedServiceUsesTheCallbackHookWhereThereIsOne) {
  echo::EchoServiceImpl service;  // CallbackService
  const InstallResult r =
      echo::InstallEchoServiceAllocators(&service, AllocationMode::kReuse);
  ASSERT_EQ(r.served(), 1) << r.ToString();
  EXPECT_EQ(Find(r, kEcho)->api, ServerApi::kCallback);
}

// Stats and the Prometheus text say, per method, its API and mode.
TEST(SyncInstallTest, StatsShowEachMethodsApiAndMode) {
  EchoServer server(AllocationMode::kReuse, 4 << 20, ServerApi::kSync);
  bool found = false;
  for (const ServedMethodStats& m : GetGrpcStats().methods) {
    if (m.method != kEcho) continue;
    found = true;
    EXPECT_EQ(m.api, ServerApi::kSync);
    EXPECT_EQ(m.installed, AllocationMode::kReuse);
    EXPECT_EQ(m.mode, AllocationMode::kReuse);
  }
  EXPECT_TRUE(found);
  EXPECT_NE(RenderPrometheusStats().find(
                "arenarpc_grpc_method_mode{method=\"arenarpc.echo.EchoService/"
                "Echo\",api=\"sync\",installed=\"reuse\",mode=\"reuse\"} 1"),
            std::string::npos);
}

// kAuto learns on real calls: sync calls are served in turn in each mode
// (and timed where they run). First in this binary: kAuto's budget is
// process-wide, the next test spends from it. The default options (its
// start-up credit covers three trials): every kAuto install of the echo
// method in this binary asks for the same, as a second install with other
// options is refused.
TEST(SyncMeasuringTest, RealCallLearningTriesEachModeOnSyncCalls) {
  const ServerOptions options(AllocationMode::kAuto);
  auto calls = [] {
    std::array<uint64_t, kNumAllocationModes> n;
    const GrpcStats s = GetGrpcStats();
    for (int m = 0; m < kNumAllocationModes; ++m) n[m] = s.modes[m].calls;
    return n;
  };
  auto three_calls = [](EchoServer& server) {
    auto stub = EchoService::NewStub(server.NewChannel());
    for (int i = 0; i < 3; ++i) {
      grpc::ClientContext context;
      EchoRequest request;
      echo::BuildEchoRequest(5, 1, &request);
      EchoResponse response;
      ASSERT_TRUE(stub->Echo(&context, request, &response).ok());
    }
  };
  const auto before = calls();
  {
    EchoServer sync_server(options, 4 << 20, ServerApi::kSync);
    three_calls(sync_server);
  }
  auto total = [](const std::array<uint64_t, kNumAllocationModes>& n) {
    return n[0] + n[1] + n[2];
  };
  ASSERT_TRUE(WaitFor([&] { return total(calls()) == total(before) + 3; }));
  const auto after_sync = calls();
  // One call in each mode: the learner's turn (heap, arena, reuse).
  for (int m = 0; m < kNumAllocationModes; ++m) {
    EXPECT_EQ(after_sync[m] - before[m], 1u) << m;
  }
}

// Shadow measurement and auto measure sync methods as callback ones.
TEST(SyncMeasuringTest, ShadowAndAutoMeasureSyncCalls) {
  ServerOptions shadowed(AllocationMode::kArena);
  shadowed.shadow.sample_one_in = 1;
  shadowed.shadow.max_cpu_share = 1.0;
  EchoServer shadow_server(shadowed, 4 << 20, ServerApi::kSync);
  EchoServer auto_server(AllocationMode::kAuto, 4 << 20, ServerApi::kSync);
  // Shadow's sampled calls, kAuto's timed ones.
  auto measured = [](bool automatic) {
    for (const MeasuredMethodStats& m : GetMeasuredMethodStats()) {
      if (m.automatic == automatic &&
          (automatic ? m.timed_calls : m.samples) > 0) {
        return true;
      }
    }
    return false;
  };
  for (EchoServer* server : {&shadow_server, &auto_server}) {
    auto stub = EchoService::NewStub(server->NewChannel());
    // Keep calling until a call was measured (shadow's background thread runs
    // at nice 19 and may drop samples on a busy machine).
    const bool automatic = server == &auto_server;
    ASSERT_TRUE(WaitFor([&] {
      grpc::ClientContext context;
      EchoRequest request;
      echo::BuildEchoRequest(5, 1, &request);
      EchoResponse response;
      EXPECT_TRUE(stub->Echo(&context, request, &response).ok());
      return measured(automatic);
    }));
  }
  bool listed = false;
  for (const MeasuredMethodStats& m : GetGrpcStats().shadow_methods) {
    listed |= m.method == kEcho && m.mode == AllocationMode::kArena;
  }
  EXPECT_TRUE(listed);
  // kAuto measures and labels each method on its own (its gRPC name).
  bool auto_listed = false;
  for (const MeasuredMethodStats& m : GetGrpcStats().auto_methods) {
    auto_listed |= m.method == kEcho;
  }
  EXPECT_TRUE(auto_listed);
}

class SyncContextTest : public ::testing::TestWithParam<AllocationMode> {
 protected:
  void SetUp() override {
    server_ =
        std::make_unique<EchoServer>(GetParam(), 4 << 20, ServerApi::kSync);
    stub_ = EchoService::NewStub(server_->NewChannel());
  }
  void TearDown() override {
    stub_.reset();
    server_.reset();
    EXPECT_TRUE(WaitFor([] { return GetGrpcStats().sync_parked == 0; }));
    EXPECT_TRUE(
        WaitFor([] { return testing::InFlight(AllocationMode::kAuto) == 0; }));
  }
  std::unique_ptr<EchoServer> server_;
  std::unique_ptr<EchoService::Stub> stub_;
};

TEST_P(SyncContextTest, MetadataPeerAuthContextAndCompression) {
  grpc::ClientContext context;
  context.AddMetadata("x-echo", "hello");
  context.AddMetadata("x-compress", "gzip");
  EchoRequest request;
  echo::BuildEchoRequest(20, 3, &request);
  EchoResponse response;
  grpc::Status s = stub_->Echo(&context, request, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  std::string why;
  EXPECT_TRUE(echo::VerifyEchoResponse(request, response, &why)) << why;
  auto value = [](const auto& map, const std::string& key) {
    auto it = map.find(key);
    return it == map.end() ? std::string("<missing>")
                           : std::string(it->second.data(), it->second.size());
  };
  EXPECT_EQ(value(context.GetServerInitialMetadata(), "x-echo-initial"),
            "hello");
  EXPECT_EQ(value(context.GetServerTrailingMetadata(), "x-echo-trailing"),
            "hello");
  // The server saw this client as its peer, over an insecure transport.
  EXPECT_NE(value(context.GetServerTrailingMetadata(), "x-echo-peer")
                .find("127.0.0.1"),
            std::string::npos);
  EXPECT_EQ(value(context.GetServerTrailingMetadata(), "x-echo-security"),
            "insecure");
}

// gRPC's log lines that say a gzip message reached a client with gzip off.
std::atomic<int> g_gzip_seen{0};
void CountGzipLog(gpr_log_func_args* args) {
  if (std::string_view(args->message).find("'gzip' is disabled") !=
      std::string_view::npos) {
    g_gzip_seen.fetch_add(1);
  }
}

// The handler's set_compression_algorithm(gzip) reaches the wire: a client
// with gzip disabled sees a gzip message (gRPC 1.51 logs it), and none
// when the handler does not ask for it.
TEST_P(SyncContextTest, CompressionSetByTheHandler) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_COMPRESSION_CHANNEL_ENABLED_ALGORITHMS_BITSET,
              1 << GRPC_COMPRESS_NONE);
  auto stub = EchoService::NewStub(grpc::CreateCustomChannel(
      server_->target(), grpc::InsecureChannelCredentials(), args));
  EchoRequest request;
  echo::BuildEchoRequest(20, 3, &request);
  gpr_set_log_function(CountGzipLog);
  for (bool gzip : {false, true}) {
    g_gzip_seen = 0;
    grpc::ClientContext context;
    if (gzip) context.AddMetadata("x-compress", "gzip");
    EchoResponse response;
    grpc::Status s = stub->Echo(&context, request, &response);
    EXPECT_EQ(g_gzip_seen.load() > 0, gzip) << s.error_message();
  }
  gpr_set_log_function(nullptr);
}

TEST_P(SyncContextTest, DeadlinePassingInsideABlockingHandler) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(200));
  EchoRequest request;
  echo::BuildEchoRequest(10, 1, &request);
  request.set_delay_ms(30000);  // the handler blocks until it sees the end
  EchoResponse response;
  grpc::Status s = stub_->Echo(&context, request, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  // The blocked handler saw the call end and returned.
  EXPECT_TRUE(
      WaitFor([&] { return server_->sync_service().cancelled_seen() >= 1; }));
}

INSTANTIATE_TEST_SUITE_P(Modes, SyncContextTest, testing::AllModes(),
                         testing::ModeTestName);

// `service` alone on 127.0.0.1, a free port.
std::unique_ptr<grpc::Server> StartServer(grpc::Service* service, int* port) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           port);
  builder.RegisterService(service);
  return builder.BuildAndStart();
}

// A sync handler that throws: gRPC's own answer (UNKNOWN), messages back.
class Thrower final : public EchoService::Service {
 public:
  grpc::Status Echo(grpc::ServerContext*, const EchoRequest*,
                    EchoResponse*) override {
    throw std::runtime_error("handler failed");
  }
};

TEST(SyncFaultTest, AThrowingHandlerIsUnknownAndReturnsTheMessages) {
  for (AllocationMode mode : {AllocationMode::kArena, AllocationMode::kReuse}) {
    Thrower service;
    ASSERT_EQ(echo::InstallEchoServiceAllocators(&service, mode).served(), 1);
    int port = 0;
    std::unique_ptr<grpc::Server> server = StartServer(&service, &port);
    ASSERT_NE(server, nullptr);
    auto stub = EchoService::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                            grpc::InsecureChannelCredentials()));
    const uint64_t calls = testing::Calls(mode);
    grpc::ClientContext context;
    EchoRequest request;
    echo::BuildEchoRequest(5, 1, &request);
    EchoResponse response;
    EXPECT_EQ(stub->Echo(&context, request, &response).error_code(),
              grpc::StatusCode::UNKNOWN);
    server->Shutdown();
    EXPECT_EQ(testing::Calls(mode), calls + 1);
    EXPECT_EQ(testing::InFlight(mode), 0u);
    EXPECT_EQ(GetGrpcStats().sync_parked, 0u);
  }
}

// Malformed bytes get what plain gRPC's sync handler answers: the same
// status code with and without arenarpc.
TEST(SyncFaultTest, MalformedBytesGetPlainGrpcsStatus) {
  grpc::StatusCode codes[2];
  for (int installed = 0; installed < 2; ++installed) {
    echo::EchoSyncServiceImpl service;
    if (installed == 1) {
      ASSERT_TRUE(
          echo::InstallEchoServiceAllocators(&service, AllocationMode::kArena)
              .ok());
    }
    int port = 0;
    std::unique_ptr<grpc::Server> server = StartServer(&service, &port);
    ASSERT_NE(server, nullptr);
    codes[installed] =
        testing::CallWithBytes(
            grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                grpc::InsecureChannelCredentials()),
            std::string("/") + kEcho, std::string("\x0a\x64\x61\x62\x63", 5))
            .error_code();
    server->Shutdown();
  }
  EXPECT_NE(codes[0], grpc::StatusCode::OK);
  EXPECT_EQ(codes[1], codes[0]);
  EXPECT_EQ(GetGrpcStats().sync_parked, 0u);
}

// Records, when the response is about to be sent (before it is
// serialized), how many of the request pool's messages are in use.
std::atomic<int64_t> g_requests_in_use_at_send{-1};
class InUseAtSend final : public grpc::experimental::Interceptor {
 public:
  void Intercept(
      grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_MESSAGE)) {
      g_requests_in_use_at_send = static_cast<int64_t>(
          DefaultMessagePool<EchoRequest>().Stats().in_use);
    }
    methods->Proceed();
  }
};
class InUseAtSendFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo*) override {
    return new InUseAtSend;
  }
};

// As gRPC's own sync handler: the request is freed once the handler
// returned, before the response is serialized and sent (kept to the end of
// the call, serializing took fresh memory: heap mode cost 1.12x plain gRPC
// on the large echo). Seen here in reuse mode: the request is back in its
// pool when the response is sent.
TEST(SyncMemoryTest, TheRequestIsFreedBeforeTheResponseIsSent) {
  echo::EchoSyncServiceImpl service;
  ASSERT_EQ(echo::InstallEchoServiceAllocators(&service, AllocationMode::kReuse)
                .served(),
            1);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&service);
  std::vector<
      std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
      factories;
  factories.push_back(std::make_unique<InUseAtSendFactory>());
  builder.experimental().SetInterceptorCreators(std::move(factories));
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  auto stub = EchoService::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  const uint64_t in_use = DefaultMessagePool<EchoRequest>().Stats().in_use;
  grpc::ClientContext context;
  EchoRequest request;
  echo::BuildEchoRequest(5, 1, &request);
  EchoResponse response;
  ASSERT_TRUE(stub->Echo(&context, request, &response).ok());
  EXPECT_EQ(g_requests_in_use_at_send.load(), static_cast<int64_t>(in_use));
  std::string why;
  EXPECT_TRUE(echo::VerifyEchoResponse(request, response, &why)) << why;
  server->Shutdown();
}

}  // namespace
}  // namespace arenarpc
