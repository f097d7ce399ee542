// The deprecated names (SharedMessagePool, GetMessageAllocator) keep
// working for one release: each reaches the same process-wide object as the
// name that replaces it (docs/CONTRIBUTING.md, "Names").
#include <gtest/gtest.h>

#include "arenarpc/grpc/allocation_mode.h"  // deprecated: kill_switch.h
#include "arenarpc/grpc/allocators.h"
#include "test_messages.pb.h"

namespace arenarpc {
namespace {

using test::Node;
using test::Record;

TEST(DeprecatedNamesTest, SharedMessagePoolIsDefaultMessagePool) {
  EXPECT_EQ(&SharedMessagePool<Node>(), &DefaultMessagePool<Node>());
  EXPECT_NE(&DefaultMessagePool<Node>(),
            static_cast<void*>(&DefaultMessagePool<Record>()));
}

TEST(DeprecatedNamesTest, GetMessageAllocatorIsDefaultMessageAllocator) {
  for (AllocationMode mode : {AllocationMode::kHeap, AllocationMode::kArena,
                              AllocationMode::kReuse, AllocationMode::kAuto}) {
    SCOPED_TRACE(std::string(AllocationModeName(mode)));
    EXPECT_EQ((GetMessageAllocator<Node, Record>(mode)),
              (DefaultMessageAllocator<Node, Record>(mode)));
  }
}

TEST(DeprecatedNamesTest, ForwardingHeaderGivesTheKillSwitch) {
  // Off in this test's environment: modes stay as asked.
  ASSERT_FALSE(ArenasDisabled());
  EXPECT_EQ(EffectiveAllocationMode(AllocationMode::kReuse),
            AllocationMode::kReuse);
}

}  // namespace
}  // namespace arenarpc
