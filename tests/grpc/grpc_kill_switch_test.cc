// The runtime kill switch: ARENARPC_DISABLE_ARENAS=1 in the environment
// turns every allocation mode into heap, end to end.
#include <gtest/gtest.h>

#include <cstdlib>

#include "arenarpc/grpc/server.h"
#include "arenarpc/grpc/stats.h"
#include "arenarpc/grpc/streaming.h"
#include "echo_service.h"
#include "grpc/grpc_test_util.h"

namespace arenarpc {
namespace {

// Before main(), as an operator would set it before starting the process.
const bool kEnvSet = [] {
  return setenv("ARENARPC_DISABLE_ARENAS", "1", /*overwrite=*/1) == 0;
}();

TEST(KillSwitchTest, EnvironmentTurnsEveryModeIntoHeap) {
  ASSERT_TRUE(kEnvSet);
  EXPECT_TRUE(ArenasDisabled());
  for (AllocationMode m : {AllocationMode::kHeap, AllocationMode::kArena,
                           AllocationMode::kReuse}) {
    EXPECT_EQ(EffectiveAllocationMode(m), AllocationMode::kHeap);
    auto* holder =
        DefaultMessageAllocator<echo::EchoRequest, echo::EchoResponse>(m)
            ->AllocateMessages();
    EXPECT_EQ(holder->request()->GetArena(), nullptr);
    holder->FreeRequest();
    holder->Release();
  }
}

// Streaming methods too: every mode's streams hand out heap messages.
TEST(KillSwitchTest, StreamsAreServedFromTheHeap) {
  for (AllocationMode m : {AllocationMode::kArena, AllocationMode::kReuse,
                           AllocationMode::kAuto}) {
    StreamMethod<echo::EchoRequest, echo::EchoResponse> method(
        "arenarpc.echo.EchoService/EchoStream", m);
    EXPECT_EQ(method.report().mode, AllocationMode::kHeap);
    StreamMessages<echo::EchoRequest> in = method.Requests();
    StreamMessages<echo::EchoResponse> out = method.Responses();
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(in.Next()->GetArena(), nullptr);
      EXPECT_EQ(out.Next()->GetArena(), nullptr);
      EXPECT_EQ(in.mode(), AllocationMode::kHeap);
    }
  }
}

class KillSwitchApiTest : public ::testing::TestWithParam<ServerApi> {};

// On either API, an arena install serves from the heap.
TEST_P(KillSwitchApiTest, ArenaServerServesFromTheHeap) {
  const uint64_t heap_calls = testing::Calls(AllocationMode::kHeap);
  testing::EchoServer server(AllocationMode::kArena, 4 << 20, GetParam());
  auto stub = echo::EchoService::NewStub(server.NewChannel());
  for (uint32_t i = 0; i < 5; ++i) {
    grpc::ClientContext context;
    echo::EchoRequest request;
    echo::BuildEchoRequest(10, i, &request);
    echo::EchoResponse response;
    ASSERT_TRUE(stub->Echo(&context, request, &response).ok());
    EXPECT_TRUE(echo::VerifyEchoResponse(request, response, nullptr));
  }
  EXPECT_TRUE(testing::WaitFor(
      [&] { return testing::Calls(AllocationMode::kHeap) == heap_calls + 5; }));
  EXPECT_EQ(testing::Calls(AllocationMode::kArena), 0u);
}

INSTANTIATE_TEST_SUITE_P(Apis, KillSwitchApiTest,
                         ::testing::Values(ServerApi::kCallback,
                                           ServerApi::kSync),
                         [](const auto& info) {
                           return std::string(ServerApiName(info.param));
                         });

}  // namespace
}  // namespace arenarpc
