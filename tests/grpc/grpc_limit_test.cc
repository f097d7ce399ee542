// ServerOptions::max_calls_in_flight: with the limit's calls in flight, the
// next is answered RESOURCE_EXHAUSTED without its messages being made (so
// unparsed) or its handler run, counted per method in stats and Prometheus
// text; once one ends, calls are served again. Sync and callback APIs.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <mutex>
#include <string>

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

constexpr char kEcho[] = "arenarpc.echo.EchoService/Echo";
constexpr char kHoldKey[] = "x-test-hold";

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

// Calls marked kHoldKey stay in their handler until Release().
class Hold {
 public:
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return released_; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
};

// A call marked kHoldKey, on its own thread.
std::future<grpc::Status> HeldCall(EchoService::Stub* stub,
                                   const EchoRequest& request) {
  return std::async(std::launch::async, [stub, &request] {
    grpc::ClientContext context;
    context.AddMetadata(kHoldKey, "1");
    EchoResponse r;
    return stub->Echo(&context, request, &r);
  });
}

bool Marked(const grpc::ServerContextBase& context) {
  return context.client_metadata().count(kHoldKey) > 0;
}

class SyncEcho final : public EchoService::Service {
 public:
  grpc::Status Echo(grpc::ServerContext* context, const EchoRequest* request,
                    EchoResponse* response) override {
    runs.fetch_add(1);
    if (Marked(*context)) hold.Wait();
    echo::FillResponse(*request, response);
    return grpc::Status::OK;
  }
  std::atomic<int> runs{0};
  Hold hold;
};

class CallbackEcho final : public EchoService::CallbackService {
 public:
  grpc::ServerUnaryReactor* Echo(grpc::CallbackServerContext* context,
                                 const EchoRequest* request,
                                 EchoResponse* response) override {
    echo::FillResponse(*request, response);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    if (Marked(*context)) {
      held = reactor;  // finished by the test
    } else {
      reactor->Finish(grpc::Status::OK);
    }
    runs.fetch_add(1);
    return reactor;
  }
  std::atomic<int> runs{0};
  std::atomic<grpc::ServerUnaryReactor*> held{nullptr};
};

// With one call held in its handler (limit 1), the next is refused
// unparsed and counted; after the held one ends, a call is served.
template <class Service>
void ExpectOverLimitRefused(Service* service, AllocationMode mode,
                            const std::function<void()>& end_held) {
  ServerOptions options(mode);
  options.max_calls_in_flight = 1;
  const InstallResult r = echo::InstallEchoServiceAllocators(service, options);
  ASSERT_TRUE(r.ok()) << r.ToString();
  testing::LocalEcho local = testing::StartLocalEcho(service);
  ASSERT_NE(local.server, nullptr);
  EchoRequest request;
  echo::BuildEchoRequest(/*scale=*/2, /*seed=*/1, &request);
  EchoResponse response;
  {
    grpc::ClientContext warm;  // sync: shows there are no interceptors
    ASSERT_TRUE(local.stub->Echo(&warm, request, &response).ok());
  }
  ASSERT_TRUE(WaitFor([&] { return testing::InFlight(mode) == 0; }));

  auto held = HeldCall(local.stub.get(), request);
  ASSERT_TRUE(WaitFor([&] { return service->runs.load() == 2; }));
  const ServedMethodStats before = EchoStats();
  const uint64_t holders = HoldersMade();
  {
    grpc::ClientContext context;
    const grpc::Status s = local.stub->Echo(&context, request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
        << s.error_message();
  }
  EXPECT_EQ(service->runs.load(), 2) << "the handler ran";
  EXPECT_EQ(HoldersMade(), holders) << "the request was parsed";
  EXPECT_EQ(EchoStats().shed_limit, before.shed_limit + 1);
  EXPECT_EQ(EchoStats().shed_deadline, before.shed_deadline);
  EXPECT_NE(
      RenderPrometheusStats().find(
          std::string("arenarpc_grpc_shed_calls_total{method=\"") + kEcho +
          "\",reason=\"limit\"} " + std::to_string(EchoStats().shed_limit)),
      std::string::npos);

  end_held();
  EXPECT_TRUE(held.get().ok());
  ASSERT_TRUE(WaitFor([&] { return testing::InFlight(mode) == 0; }));
  grpc::ClientContext next;
  EXPECT_TRUE(local.stub->Echo(&next, request, &response).ok());
  EXPECT_EQ(service->runs.load(), 3);
  local.server->Shutdown();
}

class LimitTest : public ::testing::TestWithParam<AllocationMode> {};

TEST_P(LimitTest, SyncCallOverTheLimitIsRefusedUnparsed) {
  SyncEcho service;
  ExpectOverLimitRefused(&service, GetParam(), [&] { service.hold.Release(); });
}

TEST_P(LimitTest, CallbackCallOverTheLimitIsRefusedUnparsed) {
  CallbackEcho service;
  ExpectOverLimitRefused(&service, GetParam(), [&] {
    service.held.exchange(nullptr)->Finish(grpc::Status::OK);
  });
}

INSTANTIATE_TEST_SUITE_P(Modes, LimitTest, testing::AllModes(),
                         testing::ModeTestName);

// A malformed request (sync, parsed in RunHandler) ends its limit slot
// before it counts released: a reader who sees no call in flight is
// admitted.
TEST(LimitSyncTest, AMalformedCallFreesTheLimitBeforeItCountsReleased) {
  SyncEcho service;
  ServerOptions options(AllocationMode::kArena);
  options.max_calls_in_flight = 1;
  ASSERT_TRUE(echo::InstallEchoServiceAllocators(&service, options).ok());
  int port = 0;
  std::unique_ptr<grpc::Server> server =
      testing::StartLocalServer(&service, &port);
  ASSERT_NE(server, nullptr);
  const auto channel =
      testing::NewTestChannel("127.0.0.1:" + std::to_string(port));
  const auto stub = EchoService::NewStub(channel);
  EchoRequest request;
  echo::BuildEchoRequest(/*scale=*/2, /*seed=*/1, &request);
  EchoResponse response;
  int refused = 0;
  for (int i = 0; i < 300; ++i) {
    grpc::ClientContext context;
    if (!stub->Echo(&context, request, &response).ok()) ++refused;
    ASSERT_TRUE(WaitFor(
        [&] { return testing::InFlight(AllocationMode::kArena) == 0; }));
    EXPECT_FALSE(testing::CallWithBytes(channel,
                                        "/arenarpc.echo.EchoService/Echo",
                                        std::string("\xff\xff\xff\xff", 4))
                     .ok());
    ASSERT_TRUE(WaitFor(
        [&] { return testing::InFlight(AllocationMode::kArena) == 0; }));
  }
  EXPECT_EQ(refused, 0);
  server->Shutdown();
}

// Installs the echo (limit 1, arena) on service_, `again` (if given) too,
// serves it and holds a marked call in its handler.
class LimitReinstallTest : public ::testing::Test {
 protected:
  void ServeAndHold(const ServerOptions* again = nullptr) {
    ASSERT_TRUE(echo::InstallEchoServiceAllocators(&service_, options_).ok());
    if (again != nullptr) {
      ASSERT_TRUE(echo::InstallEchoServiceAllocators(&service_, *again).ok());
    }
    local_ = testing::StartLocalEcho(&service_);
    ASSERT_NE(local_.server, nullptr);
    echo::BuildEchoRequest(/*scale=*/2, /*seed=*/1, &request_);
    held_ = HeldCall(local_.stub.get(), request_);
    ASSERT_TRUE(WaitFor([&] { return service_.runs.load() == 1; }));
  }
  void EndHeld() {
    service_.held.exchange(nullptr)->Finish(grpc::Status::OK);
    EXPECT_TRUE(held_.get().ok());
  }

  CallbackEcho service_;
  ServerOptions options_{[] {
    ServerOptions o(AllocationMode::kArena);
    o.max_calls_in_flight = 1;
    return o;
  }()};
  testing::LocalEcho local_;
  EchoRequest request_;
  std::future<grpc::Status> held_;
};

// Installing again without the limit gives gRPC's handler back (its
// generated setter casts the handler to gRPC's type): calls are not refused.
TEST_F(LimitReinstallTest, CallbackInstallAgainWithoutLimit) {
  ServerOptions unlimited = options_;
  unlimited.max_calls_in_flight = 0;
  ASSERT_NO_FATAL_FAILURE(ServeAndHold(&unlimited));
  grpc::ClientContext context;
  EchoResponse response;
  EXPECT_TRUE(local_.stub->Echo(&context, request_, &response).ok());
  EndHeld();
  local_.server->Shutdown();
}

// Installing again while a call is in flight (after the server was built:
// outside the install contract) is refused and the first install stays:
// the call still counts in the handler that admitted it, which is not
// destroyed under it.
TEST_F(LimitReinstallTest, CallbackInstallAgainWithCallsInFlightIsRefused) {
  ASSERT_NO_FATAL_FAILURE(ServeAndHold());
  const InstallResult again =
      echo::InstallEchoServiceAllocators(&service_, options_);
  EXPECT_EQ(again.served(), 0) << again.ToString();
  EXPECT_NE(again.ToString().find(std::string(kEcho) +
                                  " (installed again while its calls are in "
                                  "flight"),
            std::string::npos)
      << again.ToString();
  EchoResponse response;
  {
    grpc::ClientContext context;  // the first install's limit still holds
    EXPECT_EQ(local_.stub->Echo(&context, request_, &response).error_code(),
              grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  EndHeld();
  ASSERT_TRUE(
      WaitFor([&] { return testing::InFlight(AllocationMode::kArena) == 0; }));
  grpc::ClientContext next;
  EXPECT_TRUE(local_.stub->Echo(&next, request_, &response).ok());
  EXPECT_EQ(service_.runs.load(), 2);
  local_.server->Shutdown();
}

}  // namespace
}  // namespace arenarpc
