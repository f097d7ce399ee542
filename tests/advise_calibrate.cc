// Fits tools/advise/calibration.h: for workloads of the test protos, the
// cost of parse + destroy per mode in generated code and in DynamicMessage
// on the same bytes; prints per workload generated/dynamic and the fitted
// factor (geometric mean) and spread (largest deviation of a workload).
//
//   nice build/rel/tests/advise_calibrate > docs/raw/advise/calibration.txt
#include <google/protobuf/dynamic_message.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "advise_test_samples.h"
#include "arenarpc/cost_probe.h"
#include "schema.h"

namespace {

using arenarpc::AllocationMode;
using arenarpc::kNumAllocationModes;

struct Workload {
  std::string name;
  const google::protobuf::Message* generated;
  std::function<std::string(int)> sample;
};

}  // namespace

int main() {
  namespace test = arenarpc::test;
  const std::vector<Workload> workloads = {
      {"Node scale 2", &test::Node::default_instance(),
       [](int i) { return test::MakeNode(i, 2).SerializeAsString(); }},
      {"Node scale 8", &test::Node::default_instance(),
       [](int i) { return test::MakeNode(i, 8).SerializeAsString(); }},
      {"Node scale 32", &test::Node::default_instance(),
       [](int i) { return test::MakeNode(i, 32).SerializeAsString(); }},
      {"Batch 10 series", &test::Batch::default_instance(),
       [](int i) { return test::MakeBatch(i, 10).SerializeAsString(); }},
      {"Batch 200 series", &test::Batch::default_instance(),
       [](int i) { return test::MakeBatch(i, 200).SerializeAsString(); }},
      {"Envelope 4 leaves", &test::Envelope::default_instance(),
       [](int i) { return test::MakeEnvelope(i, 4).SerializeAsString(); }},
      {"Envelope 64 leaves", &test::Envelope::default_instance(),
       [](int i) { return test::MakeEnvelope(i, 64).SerializeAsString(); }},
  };
  constexpr int kSamples = 30;
  constexpr int kRounds = 3;
  std::unique_ptr<arenarpc::advise::Schema> schema =
      arenarpc::advise::SchemaOf(test::Node::descriptor()->file());
  google::protobuf::DynamicMessageFactory factory(&schema->pool);

  std::printf(
      "# generated/dynamic parse+destroy per mode, %d samples x %d rounds "
      "each\n",
      kSamples, kRounds);
  std::printf("%-20s %9s %9s %9s   %s\n", "workload", "heap", "arena", "reuse",
              "(generated ns: heap arena reuse)");
  std::array<std::vector<double>, kNumAllocationModes> ratios;
  for (const Workload& w : workloads) {
    const google::protobuf::Message* dynamic =
        factory.GetPrototype(schema->pool.FindMessageTypeByName(
            std::string(w.generated->GetDescriptor()->full_name())));
    arenarpc::CostProbe gen_probe(w.generated), dyn_probe(dynamic);
    std::array<double, kNumAllocationModes> gen = {}, dyn = {};
    for (int i = 0; i < kSamples; ++i) {
      const std::string wire = w.sample(i);
      // Alternated, so drift on a shared machine hits both alike.
      const arenarpc::ModeCosts g = gen_probe.Measure(wire, kRounds);
      const arenarpc::ModeCosts d = dyn_probe.Measure(wire, kRounds);
      for (int m = 0; m < kNumAllocationModes; ++m) {
        gen[m] += g.ns[m];
        dyn[m] += d.ns[m];
      }
    }
    std::printf("%-20s", w.name.c_str());
    for (int m = 0; m < kNumAllocationModes; ++m) {
      ratios[m].push_back(gen[m] / dyn[m]);
      std::printf(" %9.3f", gen[m] / dyn[m]);
    }
    std::printf("   (%.0f %.0f %.0f)\n", gen[0] / kSamples, gen[1] / kSamples,
                gen[2] / kSamples);
  }
  double spread = 0;
  std::printf("%-20s", "fit (geomean)");
  std::array<double, kNumAllocationModes> fit;
  for (int m = 0; m < kNumAllocationModes; ++m) {
    double log_sum = 0;
    for (double r : ratios[m]) log_sum += std::log(r);
    fit[m] = std::exp(log_sum / ratios[m].size());
    std::printf(" %9.3f", fit[m]);
  }
  std::printf("\n%-20s", "spread (max dev)");
  for (int m = 0; m < kNumAllocationModes; ++m) {
    double dev = 0;
    for (double r : ratios[m]) dev = std::max(dev, std::abs(r / fit[m] - 1));
    spread = std::max(spread, dev);
    std::printf(" %8.0f%%", 100 * dev);
  }
  std::printf(
      "\n\nkGeneratedPerDynamic = {%.3f, %.3f, %.3f}; kCalibrationSpread = "
      "%.2f\n",
      fit[0], fit[1], fit[2], spread);
  return 0;
}
