// arenarpc_advise on corpus types (third-party schemas, realistic
// payloads): the recommendation is the fastest mode of the same run under
// the documented rule, and never heap where the other modes win by 2x.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "advise.h"
#include "corpus.h"
#include "recommend.h"
#include "schema.h"

namespace arenarpc::advise {
namespace {

namespace fs = std::filesystem;

class CorpusAdviseTest : public ::testing::TestWithParam<const char*> {};

// The documented rule (recommend.h), worked out here from the per-sample
// costs alone, so that the test does not check Recommend() against itself:
// mode `a` "beats" `b` when the mean of the paired ratios ns_a/ns_b - 1 is
// below -kMargin and stays below 0 at kSigmas standard errors.
bool Beats(const std::vector<ModeCosts>& samples, AllocationMode a,
           AllocationMode b) {
  std::vector<double> r;
  for (const ModeCosts& c : samples) {
    if (c.ok) {
      r.push_back(c.ns[static_cast<int>(a)] /
                      std::max(c.ns[static_cast<int>(b)], 1.0) -
                  1.0);
    }
  }
  if (r.empty()) return false;
  const double n = static_cast<double>(r.size());
  double mean = 0;
  for (double x : r) mean += x / n;
  double var = 0;
  for (double x : r) var += (x - mean) * (x - mean);
  const double se = r.size() > 1 ? std::sqrt(var / (n - 1) / n) : 0.0;
  return mean < -kMargin && mean + kSigmas * se < 0;
}

AllocationMode ExpectedMode(const std::vector<ModeCosts>& samples) {
  using M = AllocationMode;
  const bool arena = Beats(samples, M::kArena, M::kHeap);
  const bool reuse = Beats(samples, M::kReuse, M::kHeap);
  if (reuse && (!arena || Beats(samples, M::kReuse, M::kArena))) {
    return M::kReuse;
  }
  return arena ? M::kArena : M::kHeap;
}

TEST_P(CorpusAdviseTest, RecommendsTheFastestModeOfTheRun) {
  const corpus::Service* service = corpus::FindService(GetParam());
  ASSERT_NE(service, nullptr);
  const fs::path dir =
      fs::temp_directory_path() /
      absl::StrFormat("arenarpc_advise_%s_%d", GetParam(), getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::vector<std::string> requests = service->generate(/*seed=*/1, 12);
  for (size_t i = 0; i < requests.size(); ++i) {
    std::ofstream(dir / absl::StrFormat("%06d.bin", i), std::ios::binary)
        << requests[i];
  }
  std::unique_ptr<Schema> schema = SchemaOf(service->request->file());
  ASSERT_NE(schema, nullptr);
  AdviseOptions options;
  options.type = std::string(service->request->full_name());
  options.samples_dir = dir.string();
  options.code = Code::kGenerated;  // linked: the corpus's generated code
  absl::StatusOr<Advice> a = Advise(*schema, options);
  fs::remove_all(dir);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->samples, 12);
  ASSERT_EQ(a->per_sample.size(), 12u);
  EXPECT_EQ(a->recommended, ExpectedMode(a->per_sample)) << a->reason;
  // Where arena or reuse costs at most half of heap in this run, the rule
  // cannot have kept heap (the margin is 3 %).
  const double heap =
      a->modes[static_cast<int>(AllocationMode::kHeap)].parse_destroy_us;
  const double arena =
      a->modes[static_cast<int>(AllocationMode::kArena)].parse_destroy_us;
  const double reuse =
      a->modes[static_cast<int>(AllocationMode::kReuse)].parse_destroy_us;
  if (std::min(arena, reuse) < 0.5 * heap) {
    EXPECT_NE(a->recommended, AllocationMode::kHeap) << a->reason;
  }
  EXPECT_EQ(a->reuse_limit, internal::ReuseLimit(service->request));
  EXPECT_FALSE(a->reason.empty());
}

INSTANTIATE_TEST_SUITE_P(Services, CorpusAdviseTest,
                         ::testing::Values("otlp_trace", "cortex_push",
                                           "etcd_txn", "health"),
                         [](const auto& info) {
                           return std::string(info.param);
                         });

}  // namespace
}  // namespace arenarpc::advise
