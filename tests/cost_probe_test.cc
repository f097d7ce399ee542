#include "arenarpc/cost_probe.h"

#include <gtest/gtest.h>

#include <string>

#include "test_messages.pb.h"

namespace arenarpc {
namespace {

TEST(CostProbeTest, MeasuresEveryModeOnRealBytes) {
  test::Batch batch;
  for (int i = 0; i < 100; ++i) {
    test::Series* s = batch.add_series();
    s->add_labels()->set_name("job" + std::to_string(i));
    s->add_samples()->set_value(i);
  }
  CostProbe probe(&test::Batch::default_instance());
  for (int round = 0; round < 3; ++round) {
    const ModeCosts c = probe.Measure(batch.SerializeAsString(), 2);
    ASSERT_TRUE(c.ok);
    for (double ns : c.ns) {
      EXPECT_GT(ns, 0);
      EXPECT_LT(ns, 1e9);  // not the "unmeasured" marker
    }
  }
}

TEST(CostProbeTest, MalformedBytesAreReportedNotMeasured) {
  CostProbe probe(&test::Batch::default_instance());
  EXPECT_FALSE(probe.Measure(std::string("\x0a\xff\xff\xff\xff\x0f", 6)).ok);
  EXPECT_TRUE(probe.Measure("").ok);  // empty is a valid (empty) message
}

}  // namespace
}  // namespace arenarpc
