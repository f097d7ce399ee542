// The build-time kill switch: arenarpc::grpc compiled against the core built
// with ARENARPC_DISABLE_ARENAS turns every mode into heap.
#include <gtest/gtest.h>

#include "arenarpc/grpc/server.h"
#include "arenarpc/grpc/stats.h"
#include "test_messages.pb.h"

namespace arenarpc {
namespace {

#ifndef ARENARPC_DISABLE_ARENAS
#error "this test must be built with ARENARPC_DISABLE_ARENAS"
#endif

TEST(DisabledBuildTest, EveryModeIsHeap) {
  using test::Envelope;
  EXPECT_TRUE(ArenasDisabled());
  for (AllocationMode m : {AllocationMode::kHeap, AllocationMode::kArena,
                           AllocationMode::kReuse}) {
    EXPECT_EQ(EffectiveAllocationMode(m), AllocationMode::kHeap);
    auto* holder =
        DefaultMessageAllocator<Envelope, Envelope>(m)->AllocateMessages();
    EXPECT_EQ(holder->request()->GetArena(), nullptr);
    holder->request()->set_id("3");
    holder->FreeRequest();
    holder->Release();
  }
  const GrpcStats s = GetGrpcStats();
  EXPECT_EQ(s.modes[static_cast<int>(AllocationMode::kHeap)].calls, 3u);
  EXPECT_EQ(s.modes[static_cast<int>(AllocationMode::kArena)].calls, 0u);
  EXPECT_EQ(s.modes[static_cast<int>(AllocationMode::kHeap)].free_request_calls,
            3u);
}

}  // namespace
}  // namespace arenarpc
