// Allocation failure under a real gRPC server: while the OS refuses every
// page the page pool asks for, calls in every mode still get their full,
// correct answer (arenas take heap blocks, counted in
// ArenaStats::blocks_from_heap_fallback); the server keeps serving and every
// call's messages go back. docs/OPERATE.md, "When memory runs out", says why no
// call is failed with RESOURCE_EXHAUSTED.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "arenarpc/arena.h"
#include "arenarpc/grpc/client.h"
#include "arenarpc/page_pool.h"
#include "echo_service.h"
#include "fault_injection.h"
#include "grpc/grpc_test_util.h"

namespace arenarpc {
namespace {

using echo::EchoRequest;
using echo::EchoResponse;
using testing::InFlight;
using testing::WaitFor;

class GrpcFaultTest : public ::testing::TestWithParam<AllocationMode> {};

// Scale 200: about 260 KB per request, several arena pages per message.
// The client's messages are on the heap: the client runs in this process,
// and its arenas would count in the same ArenaStats as the server's.
void ExpectEchoes(echo::EchoService::Stub* stub, int n) {
  for (int i = 0; i < n; ++i) {
    grpc::ClientContext context;
    EchoRequest request;
    EchoResponse response;
    echo::BuildEchoRequest(200, static_cast<uint32_t>(i), &request);
    grpc::Status s = stub->Echo(&context, request, &response);
    ASSERT_TRUE(s.ok()) << s.error_code() << " " << s.error_message();
    std::string why;
    EXPECT_TRUE(echo::VerifyEchoResponse(request, response, &why)) << why;
  }
}

// The client's arenas (ClientCall) under the same faults: also served.
void ExpectEchoesOnClientArenas(echo::EchoService::Stub* stub, int n) {
  for (int i = 0; i < n; ++i) {
    ClientCall<EchoRequest, EchoResponse> call;
    echo::BuildEchoRequest(200, static_cast<uint32_t>(i), call.request());
    grpc::Status s =
        stub->Echo(call.context(), *call.request(), call.response());
    ASSERT_TRUE(s.ok()) << s.error_code() << " " << s.error_message();
    std::string why;
    EXPECT_TRUE(
        echo::VerifyEchoResponse(*call.request(), *call.response(), &why))
        << why;
  }
}

TEST_P(GrpcFaultTest, PagesRefusedCallsAreServedFromTheHeapAndServingGoesOn) {
  const AllocationMode mode = GetParam();
  testing::EchoServer server(mode);
  auto stub = echo::EchoService::NewStub(server.NewChannel());
  ExpectEchoes(stub.get(), 2);  // warm: the server's threads exist
  const uint64_t fallback_before = GetArenaStats().blocks_from_heap_fallback;
  uint64_t fallback_after;
  {
    // Reuse keeps instances (each on its own arena) across calls: drop the
    // cached ones, so that the calls below need new arenas, whichever
    // gRPC thread serves them (else reuse may need no block at all).
    DefaultMessagePool<EchoRequest>().ReleaseIdleCaches(
        std::chrono::milliseconds(0));
    DefaultMessagePool<EchoResponse>().ReleaseIdleCaches(
        std::chrono::milliseconds(0));
    DefaultMessagePool<EchoRequest>().Trim();
    DefaultMessagePool<EchoResponse>().Trim();
    // Arena mode: the server threads' pooled arenas keep a page each, and
    // their page caches pages, enough for the calls below on a quiet
    // thread (no new block needed: seen in 4 of 10 runs alone): drop them.
    ReleaseIdleArenas(std::chrono::milliseconds(0));
    PagePool::Default().FlushThreadCache();
    PagePool::Default().ReleaseIdleCaches(std::chrono::milliseconds(0));
    PagePool::Default().Trim();
    test::MapFaults faults(1);  // every mapping fails
    ExpectEchoes(stub.get(), 30);
    // Only the server's arenas count here (the client's are on the heap).
    fallback_after = GetArenaStats().blocks_from_heap_fallback;
    ExpectEchoesOnClientArenas(stub.get(), 2);
  }
  if (mode == AllocationMode::kHeap) {
    EXPECT_EQ(fallback_after, fallback_before) << "heap mode has no arenas";
  } else {
    EXPECT_GT(fallback_after, fallback_before);
  }
  std::printf(
      "figure: %s, every mapping refused: 30 calls OK, %llu heap fallback "
      "blocks\n",
      std::string(AllocationModeName(mode)).c_str(),
      static_cast<unsigned long long>(
          GetArenaStats().blocks_from_heap_fallback - fallback_before));
  // Pages again: no more heap blocks once the OS maps pages.
  const uint64_t fallback_end = GetArenaStats().blocks_from_heap_fallback;
  ExpectEchoes(stub.get(), 5);
  EXPECT_EQ(GetArenaStats().blocks_from_heap_fallback, fallback_end);
  EXPECT_TRUE(WaitFor([&] { return InFlight(mode) == 0; })) << InFlight(mode);
}

INSTANTIATE_TEST_SUITE_P(Modes, GrpcFaultTest, testing::AllModes(),
                         testing::ModeTestName);

}  // namespace
}  // namespace arenarpc
