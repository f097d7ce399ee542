// Fits tools/advise/calibration.h: for workloads of the test protos, the
// cost of parse + destroy per mode in generated code and in DynamicMessage
// on the same bytes; prints per workload generated/dynamic and the fitted
// factor (geometric mean) and spread (largest deviation of a workload).
// Reuse has two factors: of a type Clear() keeps whole (ReuseLimit() "",
// generated Clear() is far cheaper than DynamicMessage's reflection), and
// of the others, which MessagePool gives a fresh arena: arena's factor.
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
#include "arenarpc/message_pool.h"
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
      {"Leaf 16 bytes", &test::Leaf::default_instance(),
       [](int i) { return test::MakeLeaf(i, 16).SerializeAsString(); }},
      {"Leaf 900 bytes", &test::Leaf::default_instance(),
       [](int i) { return test::MakeLeaf(i, 900).SerializeAsString(); }},
      {"Envelope 4 leaves", &test::Envelope::default_instance(),
       [](int i) { return test::MakeEnvelope(i, 4).SerializeAsString(); }},
      {"Envelope 64 leaves", &test::Envelope::default_instance(),
       [](int i) { return test::MakeEnvelope(i, 64).SerializeAsString(); }},
  };
  constexpr int kSamples = 100;
  constexpr int kRounds = 3;
  std::unique_ptr<arenarpc::advise::Schema> schema =
      arenarpc::advise::SchemaOf(test::Node::descriptor()->file());
  google::protobuf::DynamicMessageFactory factory(&schema->pool);

  std::printf(
      "# generated/dynamic parse+destroy per mode, %d samples x %d rounds "
      "each\n",
      kSamples, kRounds);
  std::printf("%-20s %9s %9s %9s %s   %s\n", "workload", "heap", "arena",
              "reuse", "kept", "(generated ns: heap arena reuse)");
  // Columns: heap, arena, reuse of types Clear() keeps whole; the reuse of
  // the other types goes with arena's (it is an arena).
  constexpr int kReuseKept = 2;
  std::array<std::vector<double>, 3> ratios;
  for (const Workload& w : workloads) {
    const google::protobuf::Message* dynamic =
        factory.GetPrototype(schema->pool.FindMessageTypeByName(
            std::string(w.generated->GetDescriptor()->full_name())));
    const bool kept =
        arenarpc::internal::ReuseLimit(w.generated->GetDescriptor()).empty();
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
      const double r = gen[m] / dyn[m];
      const bool reuse =
          m == static_cast<int>(arenarpc::AllocationMode::kReuse);
      ratios[reuse && !kept ? static_cast<int>(arenarpc::AllocationMode::kArena)
                            : m]
          .push_back(r);
      std::printf(" %9.3f", r);
    }
    std::printf(" %4s   (%.0f %.0f %.0f)\n", kept ? "yes" : "no",
                gen[0] / kSamples, gen[1] / kSamples, gen[2] / kSamples);
  }
  std::array<double, 3> fit, dev = {};
  for (int c = 0; c < 3; ++c) {
    double log_sum = 0;
    for (double r : ratios[c]) log_sum += std::log(r);
    fit[c] = std::exp(log_sum / ratios[c].size());
    for (double r : ratios[c])
      dev[c] = std::max(dev[c], std::abs(r / fit[c] - 1));
  }
  std::printf("\n%-26s %9s %9s %9s\n", "", "heap", "arena", "reuse (kept)");
  std::printf("%-26s %9.3f %9.3f %9.3f\n", "fit (geomean)", fit[0], fit[1],
              fit[kReuseKept]);
  std::printf("%-26s %8.0f%% %8.0f%% %8.0f%%\n", "spread (max dev, workload)",
              100 * dev[0], 100 * dev[1], 100 * dev[kReuseKept]);
  std::printf(
      "\nkGeneratedPerDynamic = {%.3f, %.3f, %.3f}; kCalibrationSpread = "
      "%.2f\n",
      fit[0], fit[1], fit[kReuseKept],
      std::max({dev[0], dev[1], dev[kReuseKept]}));
  return 0;
}
