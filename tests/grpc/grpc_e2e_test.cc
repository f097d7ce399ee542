// End-to-end: a real gRPC server on 127.0.0.1 in each allocation mode, on
// the callback API and on the sync API, with bad input and faults. Each test
// checks that the calls' messages were all returned (in_flight back to zero,
// pools back to baseline); ASan/LSan check use-after-free and leaks.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "arenarpc/grpc/client.h"
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
using testing::InFlight;
using testing::WaitFor;

// Completion of callback calls.
class Latch {
 public:
  explicit Latch(int n) : n_(n) {}
  void CountDown() {
    std::lock_guard<std::mutex> lock(mu_);
    if (--n_ == 0) cv_.notify_all();
  }
  bool Wait(std::chrono::seconds limit = std::chrono::seconds(60)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, limit, [this] { return n_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int n_;
};

class EchoE2eTest
    : public ::testing::TestWithParam<std::tuple<AllocationMode, ServerApi>> {
 protected:
  void SetUp() override {
    mode_ = std::get<0>(GetParam());
    api_ = std::get<1>(GetParam());
    pool_in_use_ = ReusePoolsInUse();
    server_ = std::make_unique<EchoServer>(mode_, /*max_receive_bytes=*/1 << 20,
                                           api_);
    channel_ = server_->NewChannel();
    stub_ = EchoService::NewStub(channel_);
  }
  void TearDown() override {
    stub_.reset();
    channel_.reset();
    server_.reset();
    // Everything the calls held is back.
    EXPECT_TRUE(WaitFor([&] { return InFlight(mode_) == 0; }))
        << InFlight(mode_);
    EXPECT_TRUE(WaitFor([&] { return ReusePoolsInUse() == pool_in_use_; }));
  }

  static uint64_t ReusePoolsInUse() {
    return DefaultMessagePool<EchoRequest>().Stats().in_use +
           DefaultMessagePool<EchoResponse>().Stats().in_use;
  }

  // A blocking echo of scale `scale`; expects a verified response.
  void ExpectEcho(int scale, uint32_t seed) {
    ClientCall<EchoRequest, EchoResponse> call;
    echo::BuildEchoRequest(scale, seed, call.request());
    grpc::Status s =
        stub_->Echo(call.context(), *call.request(), call.response());
    ASSERT_TRUE(s.ok()) << s.error_code() << " " << s.error_message();
    std::string why;
    EXPECT_TRUE(
        echo::VerifyEchoResponse(*call.request(), *call.response(), &why))
        << why;
  }

  AllocationMode mode_;
  ServerApi api_;
  uint64_t pool_in_use_ = 0;
  std::unique_ptr<EchoServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<EchoService::Stub> stub_;
};

TEST_P(EchoE2eTest, EchoesTheDefaultPayload) {
  const uint64_t calls = testing::Calls(mode_);
  EchoRequest probe;
  echo::BuildEchoRequest(100, 1, &probe);
  EXPECT_GT(probe.ByteSizeLong(), 120u << 10);  // ~130 KB
  EXPECT_LT(probe.ByteSizeLong(), 150u << 10);
  for (uint32_t i = 0; i < 5; ++i) ExpectEcho(100, i);
  EXPECT_TRUE(WaitFor([&] { return testing::Calls(mode_) == calls + 5; }));
  if (mode_ == AllocationMode::kArena) {
    const GrpcModeStats s =
        GetGrpcStats().modes[static_cast<int>(AllocationMode::kArena)];
    EXPECT_GT(s.arena_bytes_p50, 128u << 10);  // the response alone is ~130 KB
  }
}

TEST_P(EchoE2eTest, CallbackClientWithClientCall) {
  constexpr int kCalls = 32;
  Latch latch(kCalls);
  std::atomic<int> ok{0};
  for (int i = 0; i < kCalls; ++i) {
    ClientCall<EchoRequest, EchoResponse> call;
    echo::BuildEchoRequest(10, i, call.request());
    const EchoRequest* request = call.request();
    stub_->async()->Echo(
        call.context(), call.request(), call.response(),
        call.Then([&, request](const grpc::Status& s, EchoResponse* response) {
          if (s.ok() &&
              echo::VerifyEchoResponse(*request, *response, nullptr)) {
            ok.fetch_add(1);
          }
          latch.CountDown();
        }));
  }
  ASSERT_TRUE(latch.Wait());
  EXPECT_EQ(ok.load(), kCalls);
}

// A caller woken by `done` may drop the channel at once; the call's context
// must not hold the last reference then (gRPC 1.51 would shut its callback
// queue down from that queue's own thread: a double free under ASan).
TEST_P(EchoE2eTest, TheContextLetsGoOfTheChannelBeforeDone) {
  const long before = channel_.use_count();
  Latch latch(1);
  long in_done = -1;
  ClientCall<EchoRequest, EchoResponse> call;
  echo::BuildEchoRequest(5, 1, call.request());
  stub_->async()->Echo(call.context(), call.request(), call.response(),
                       call.Then([&](const grpc::Status& s, EchoResponse*) {
                         EXPECT_TRUE(s.ok()) << s.error_message();
                         in_done = channel_.use_count();
                         latch.CountDown();
                       }));
  ASSERT_TRUE(latch.Wait());
  EXPECT_EQ(in_done, before);
}

TEST_P(EchoE2eTest, MalformedBytesFailTheCallAndReturnTheMessages) {
  const uint64_t calls = testing::Calls(mode_);
  // Field 1 (payload, length-delimited) claims 100 bytes, 3 follow.
  const std::string garbage[] = {std::string("\x0a\x64\x61\x62\x63", 5),
                                 std::string("\xff\xff\xff\xff\xff\xff", 6),
                                 std::string("\x12\x05\x0a\x03", 4)};
  for (const std::string& bytes : garbage) {
    const grpc::Status status = testing::CallWithBytes(
        channel_, "/arenarpc.echo.EchoService/Echo", bytes);
    // What plain gRPC 1.51 answers: its callback unary handler, its
    // "unimplemented" reactor; its sync handler, INTERNAL.
    EXPECT_EQ(status.error_code(), api_ == ServerApi::kSync
                                       ? grpc::StatusCode::INTERNAL
                                       : grpc::StatusCode::UNIMPLEMENTED)
        << status.error_code() << " " << status.error_message();
  }
  // The allocator ran for each and the holders were released.
  EXPECT_TRUE(WaitFor([&] { return testing::Calls(mode_) == calls + 3; }));
  EXPECT_TRUE(WaitFor([&] { return InFlight(mode_) == 0; }));
  EXPECT_TRUE(WaitFor([&] { return ReusePoolsInUse() == pool_in_use_; }));
  ExpectEcho(10, 1);  // still serving
}

TEST_P(EchoE2eTest, OverMaxReceiveSizeIsResourceExhausted) {
  const uint64_t calls = testing::Calls(mode_);
  ClientCall<EchoRequest, EchoResponse> call;
  echo::BuildEchoRequest(900, 1, call.request());  // > 1 MiB
  ASSERT_GT(call.request()->ByteSizeLong(), 1u << 20);
  grpc::Status s =
      stub_->Echo(call.context(), *call.request(), call.response());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << s.error_message();
  // Whatever gRPC allocated for the rejected call is released, and counted
  // once at most; the next call counts exactly one.
  EXPECT_TRUE(WaitFor([&] { return InFlight(mode_) == 0; }));
  const uint64_t after_rejected = testing::Calls(mode_);
  EXPECT_LE(after_rejected, calls + 1);
  ExpectEcho(10, 2);  // still serving
  EXPECT_TRUE(WaitFor([&] { return InFlight(mode_) == 0; }));
  EXPECT_EQ(testing::Calls(mode_), after_rejected + 1);
  EXPECT_TRUE(WaitFor([&] { return ReusePoolsInUse() == pool_in_use_; }));
}

TEST_P(EchoE2eTest, FinishFromAnotherThreadAfterADelay) {
  constexpr int kCalls = 16;
  Latch latch(kCalls);
  std::atomic<int> ok{0};
  for (int i = 0; i < kCalls; ++i) {
    ClientCall<EchoRequest, EchoResponse> call;
    echo::BuildEchoRequest(20, i, call.request());
    call.request()->set_delay_ms(20 + i * 3);
    EchoRequest expected = *call.request();
    stub_->async()->Echo(
        call.context(), call.request(), call.response(),
        call.Then([&, expected](const grpc::Status& s, EchoResponse* r) {
          std::string why;
          if (s.ok() && echo::VerifyEchoResponse(expected, *r, &why)) {
            ok.fetch_add(1);
          } else {
            ADD_FAILURE() << s.error_message() << why;
          }
          latch.CountDown();
        }));
  }
  ASSERT_TRUE(latch.Wait());
  EXPECT_EQ(ok.load(), kCalls);
}

TEST_P(EchoE2eTest, ErrorStatusFromTheHandler) {
  ClientCall<EchoRequest, EchoResponse> call;
  echo::BuildEchoRequest(5, 1, call.request());
  call.request()->set_fail_with_code(grpc::StatusCode::FAILED_PRECONDITION);
  grpc::Status s =
      stub_->Echo(call.context(), *call.request(), call.response());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(call.response()->payload_size(), 0);
}

TEST_P(EchoE2eTest, CancelledCalls) {
  constexpr int kCalls = 8;
  Latch latch(kCalls);
  std::vector<grpc::ClientContext*> contexts;
  std::atomic<int> cancelled{0};
  const uint64_t in_flight = InFlight(mode_);
  for (int i = 0; i < kCalls; ++i) {
    ClientCall<EchoRequest, EchoResponse> call;
    echo::BuildEchoRequest(10, i, call.request());
    call.request()->set_delay_ms(3000);  // all in flight even under load
    contexts.push_back(call.context());
    stub_->async()->Echo(call.context(), call.request(), call.response(),
                         call.Then([&](const grpc::Status& s, EchoResponse*) {
                           if (s.error_code() == grpc::StatusCode::CANCELLED)
                             cancelled++;
                           latch.CountDown();
                         }));
  }
  // Every call reached the handler and waits for its delayed Finish.
  ASSERT_TRUE(WaitFor([&] { return InFlight(mode_) == in_flight + kCalls; }));
  for (grpc::ClientContext* c : contexts) c->TryCancel();  // alive until done
  ASSERT_TRUE(latch.Wait());
  EXPECT_EQ(cancelled.load(), kCalls);
}

TEST_P(EchoE2eTest, DeadlineExceeded) {
  ClientCall<EchoRequest, EchoResponse> call;
  echo::BuildEchoRequest(10, 1, call.request());
  call.request()->set_delay_ms(1000);
  call.context()->set_deadline(std::chrono::system_clock::now() +
                               std::chrono::milliseconds(100));
  grpc::Status s =
      stub_->Echo(call.context(), *call.request(), call.response());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  ExpectEcho(5, 3);  // still serving
}

TEST_P(EchoE2eTest, ShutdownWithCallsInFlight) {
  constexpr int kCalls = 16;
  Latch latch(kCalls);
  const uint64_t in_flight = InFlight(mode_);
  std::atomic<int> finished{0};
  for (int i = 0; i < kCalls; ++i) {
    ClientCall<EchoRequest, EchoResponse> call;
    echo::BuildEchoRequest(20, i, call.request());
    // Long enough that all calls are in flight together even on a loaded
    // machine under ASan (300 ms was not: the first ones had finished).
    call.request()->set_delay_ms(3000);
    stub_->async()->Echo(call.context(), call.request(), call.response(),
                         call.Then([&](const grpc::Status&, EchoResponse*) {
                           finished++;
                           latch.CountDown();
                         }));
  }
  ASSERT_TRUE(WaitFor([&] { return InFlight(mode_) == in_flight + kCalls; }));
  server_->Shutdown(std::chrono::milliseconds(10));  // cancels, then waits
  ASSERT_TRUE(latch.Wait());
  EXPECT_EQ(finished.load(), kCalls);
  EXPECT_EQ(InFlight(mode_), in_flight);  // Shutdown waited for every call
}

TEST_P(EchoE2eTest, BidiStreamOnAStreamArena) {
  grpc::ClientContext context;
  auto stream = stub_->EchoStream(&context);
  for (uint32_t i = 0; i < 20; ++i) {
    EchoRequest request;
    echo::BuildEchoRequest(i % 2 == 0 ? 10 : 100, i, &request);
    ASSERT_TRUE(stream->Write(request));
    EchoResponse response;
    ASSERT_TRUE(stream->Read(&response));
    std::string why;
    EXPECT_TRUE(echo::VerifyEchoResponse(request, response, &why)) << why;
  }
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

INSTANTIATE_TEST_SUITE_P(
    ModesAndApis, EchoE2eTest,
    ::testing::Combine(testing::AllModes(),
                       ::testing::Values(ServerApi::kCallback,
                                         ServerApi::kSync)),
    [](const auto& info) {
      return std::string(AllocationModeName(std::get<0>(info.param))) + "_" +
             std::string(ServerApiName(std::get<1>(info.param)));
    });

}  // namespace
}  // namespace arenarpc
