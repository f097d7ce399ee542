// Shadow measurement (ServerOptions::shadow): responses unchanged, bounded
// queue that drops instead of waiting, malformed samples counted, captures
// bounded and readable by arenarpc_advise.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "arenarpc/grpc/server.h"
#include "arenarpc/grpc/stats.h"
#include "grpc/grpc_test_util.h"

namespace arenarpc {
namespace {

namespace fs = std::filesystem;
using ::arenarpc::echo::EchoRequest;
using ::arenarpc::echo::EchoResponse;
using ::arenarpc::testing::EchoServer;
using ::arenarpc::testing::WaitFor;

// The stats of the meter of `method` installed in `mode` (a method may be
// measured in several modes in one process).
MeasuredMethodStats StatsOf(const std::string& method,
                            AllocationMode mode = AllocationMode::kArena) {
  for (const MeasuredMethodStats& s : GetMeasuredMethodStats()) {
    if (s.method == method && s.mode == mode) return s;
  }
  return {};
}

// A scratch directory, removed at the end.
class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : path_(fs::temp_directory_path() /
              (name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<fs::path> BinFiles(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".bin") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

EchoRequest Request(int scale, uint32_t seed) {
  EchoRequest r;
  echo::BuildEchoRequest(scale, seed, &r);
  return r;
}

class ShadowModeTest : public ::testing::TestWithParam<AllocationMode> {};

// Every call sampled, for each installed mode: each response is byte for
// byte the one a server without shadow measurement sends, the method is
// measured under its full name, and its sampled requests are captured.
TEST_P(ShadowModeTest, ResponsesUnchangedAndMethodMeasured) {
  TempDir dir("arenarpc_shadow_e2e");
  ServerOptions with(GetParam());
  with.shadow.sample_one_in = 1;
  with.shadow.max_cpu_share = 1.0;  // measure every sample, whatever it costs
  with.shadow.capture_dir = dir.path().string();
  with.shadow.capture_max_files = 5;
  EchoServer plain(GetParam());
  EchoServer shadowed(with);
  auto plain_stub = echo::EchoService::NewStub(plain.NewChannel());
  auto shadow_stub = echo::EchoService::NewStub(shadowed.NewChannel());
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    const EchoRequest request = Request(1 + static_cast<int>(seed % 4), seed);
    EchoResponse a, b;
    grpc::ClientContext ca, cb;
    ASSERT_TRUE(plain_stub->Echo(&ca, request, &a).ok());
    ASSERT_TRUE(shadow_stub->Echo(&cb, request, &b).ok());
    EXPECT_EQ(a.SerializeAsString(), b.SerializeAsString()) << "seed " << seed;
  }
  const std::string method = "arenarpc.echo.EchoService/Echo";
  ASSERT_TRUE(WaitFor([&] { return StatsOf(method, GetParam()).samples > 0; }));
  const MeasuredMethodStats s = StatsOf(method, GetParam());
  EXPECT_FALSE(s.automatic);
  EXPECT_EQ(s.mode, GetParam());
  EXPECT_NE(s.recommended, AllocationMode::kAuto);
  for (double c : s.cost_us) EXPECT_GT(c, 0);
  EXPECT_DOUBLE_EQ(s.saving_us, s.cost_us[static_cast<int>(s.mode)] -
                                    s.cost_us[static_cast<int>(s.recommended)]);
  EXPECT_EQ(s.malformed, 0u);

  bool listed = false;
  for (const MeasuredMethodStats& m : GetGrpcStats().shadow_methods) {
    listed |= m.method == method && m.mode == GetParam();
  }
  EXPECT_TRUE(listed);
  const std::string text = RenderPrometheusStats();
  EXPECT_NE(text.find("arenarpc_grpc_shadow_cost_microseconds{method=\"" +
                      method + "\",mode=\"" +
                      std::string(AllocationModeName(GetParam())) + "\"}"),
            std::string::npos);
  EXPECT_NE(
      text.find("arenarpc_grpc_shadow_saving_microseconds{method=\"" + method),
      std::string::npos);

  // The capture: under the method's directory, the type named, each file a
  // request that was sent.
  const fs::path capture = dir.path() / "arenarpc.echo.EchoService.Echo";
  // The measuring thread runs at nice 19 and its queue holds 4 samples, so
  // on a busy machine it may have dropped some of the 12: send the same
  // requests again (each 20 ms) until 5 are captured.
  uint32_t resend = 0;
  auto last = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitFor([&] {
    if (BinFiles(capture).size() >= 5) return true;
    if (std::chrono::steady_clock::now() - last >
        std::chrono::milliseconds(20)) {
      const uint32_t seed = 1 + resend++ % 12;
      EchoResponse r;
      grpc::ClientContext c;
      EXPECT_TRUE(
          shadow_stub
              ->Echo(&c, Request(1 + static_cast<int>(seed % 4), seed), &r)
              .ok());
      last = std::chrono::steady_clock::now();
    }
    return false;
  }));
  EXPECT_EQ(BinFiles(capture).size(), 5u);  // capture_max_files holds
  EXPECT_EQ(ReadFile(capture / "TYPE"), "arenarpc.echo.EchoRequest\n");
  std::set<std::string> sent;
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    sent.insert(
        Request(1 + static_cast<int>(seed % 4), seed).SerializeAsString());
  }
  for (const fs::path& f : BinFiles(capture)) {
    EchoRequest r;
    ASSERT_TRUE(r.ParseFromString(ReadFile(f))) << f;
    EXPECT_TRUE(sent.count(r.SerializeAsString())) << f;
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, ShadowModeTest,
                         ::testing::Values(AllocationMode::kHeap,
                                           AllocationMode::kArena,
                                           AllocationMode::kReuse),
                         testing::ModeTestName);

ShadowOptions Measured(int one_in = 1) {
  ShadowOptions o;
  o.sample_one_in = one_in;
  o.max_cpu_share = 1.0;
  return o;
}

TEST(ShadowTest, DropsInsteadOfWaitingWhenTheQueueIsFull) {
  internal::MethodMeter meter("test/QueueFull", AllocationMode::kArena,
                              Measured(), &EchoRequest::default_instance(),
                              &EchoResponse::default_instance());
  const std::string bytes = Request(1, 3).SerializeAsString();
  ASSERT_TRUE(WaitFor([] { return internal::QueuedSamplesForTest() == 0; }));
  internal::PauseMeasuringForTest(true);
  // Fill the queue (a submission may also lose the queue's lock to the
  // measuring thread: dropped as well, never waited for).
  int queued = 0, attempts = 0;
  while (queued < 4 && attempts < 10000) {
    ++attempts;
    queued += meter.SubmitBytes(bytes, "") ? 1 : 0;
  }
  int refused = 0;
  for (int i = 0; i < 10; ++i) refused += meter.SubmitBytes(bytes, "") ? 0 : 1;
  // While the queue is full the meter does not even sample.
  int sampled = 0;
  for (int i = 0; i < 100; ++i) sampled += meter.ShouldSample() ? 1 : 0;
  internal::PauseMeasuringForTest(false);
  EXPECT_EQ(queued, 4);  // the queue's bound
  EXPECT_EQ(refused, 10);
  EXPECT_EQ(sampled, 0);
  EXPECT_EQ(StatsOf("test/QueueFull").dropped,
            static_cast<uint64_t>(attempts - queued + 10 + 100));
  ASSERT_TRUE(WaitFor([&] {
    return StatsOf("test/QueueFull").samples == static_cast<uint64_t>(queued);
  }));
}

TEST(ShadowTest, MalformedSampledBytesAreCountedAndDropped) {
  TempDir dir("arenarpc_shadow_malformed");
  ShadowOptions o = Measured();
  o.capture_dir = dir.path().string();
  internal::MethodMeter meter("test/Malformed", AllocationMode::kHeap, o,
                              &EchoRequest::default_instance(),
                              &EchoResponse::default_instance());
  // A truncated length-delimited field, then a valid request.
  ASSERT_TRUE(
      WaitFor([&] { return meter.SubmitBytes("\x0a\xff\xff\x03", ""); }));
  ASSERT_TRUE(WaitFor([&] {
    return meter.SubmitBytes(Request(1, 5).SerializeAsString(), "");
  }));
  ASSERT_TRUE(WaitFor([&] {
    return StatsOf("test/Malformed", AllocationMode::kHeap).samples == 1;
  }));
  const MeasuredMethodStats s =
      StatsOf("test/Malformed", AllocationMode::kHeap);
  EXPECT_EQ(s.malformed, 1u);
  EXPECT_EQ(s.captured, 1u);  // only the request that parses
  EXPECT_EQ(BinFiles(dir.path() / "test.Malformed").size(), 1u);
}

TEST(ShadowTest, CaptureIsBoundedByFilesAndBytesAcrossRestarts) {
  TempDir dir("arenarpc_shadow_bounds");
  const std::string bytes = Request(2, 9).SerializeAsString();
  auto submit_all = [&](internal::MethodMeter& meter, const std::string& name,
                        AllocationMode mode, int n) {
    for (int i = 0; i < n; ++i) {
      const uint64_t before = StatsOf(name, mode).samples;
      ASSERT_TRUE(WaitFor([&] { return meter.SubmitBytes(bytes, ""); }));
      ASSERT_TRUE(
          WaitFor([&] { return StatsOf(name, mode).samples == before + 1; }));
    }
  };
  ShadowOptions by_files = Measured();
  by_files.capture_dir = dir.path().string();
  by_files.capture_max_files = 3;
  internal::MethodMeter files("/x.Files/Get", AllocationMode::kArena, by_files,
                              &EchoRequest::default_instance(),
                              &EchoResponse::default_instance());
  submit_all(files, "/x.Files/Get", AllocationMode::kArena, 5);
  EXPECT_EQ(BinFiles(dir.path() / "x.Files.Get").size(), 3u);
  EXPECT_EQ(StatsOf("/x.Files/Get").captured, 3u);

  ShadowOptions by_bytes = Measured();
  by_bytes.capture_dir = dir.path().string();
  by_bytes.capture_max_bytes = 2 * bytes.size() + 1;
  internal::MethodMeter sized("/x.Bytes/Get", AllocationMode::kArena, by_bytes,
                              &EchoRequest::default_instance(),
                              &EchoResponse::default_instance());
  submit_all(sized, "/x.Bytes/Get", AllocationMode::kArena, 4);
  EXPECT_EQ(BinFiles(dir.path() / "x.Bytes.Get").size(), 2u);

  // A restarted server (a new meter on the same directory) counts what is
  // there: the method's directory stays within its bound.
  internal::MethodMeter again("/x.Files/Get", AllocationMode::kHeap, by_files,
                              &EchoRequest::default_instance(),
                              &EchoResponse::default_instance());
  submit_all(again, "/x.Files/Get", AllocationMode::kHeap, 2);
  EXPECT_EQ(BinFiles(dir.path() / "x.Files.Get").size(), 3u);
}

// Method names become single directory names, never a way out of the
// capture directory.
TEST(ShadowTest, CaptureDirectoryNamesStayInside) {
  TempDir dir("arenarpc_shadow_names");
  ShadowOptions o = Measured();
  o.capture_dir = (dir.path() / "c").string();
  internal::MethodMeter meter("/../..", AllocationMode::kArena, o,
                              &EchoRequest::default_instance(),
                              &EchoResponse::default_instance());
  ASSERT_TRUE(WaitFor([&] {
    return meter.SubmitBytes(Request(1, 1).SerializeAsString(), "");
  }));
  ASSERT_TRUE(WaitFor([&] { return StatsOf("/../..").captured == 1; }));
  EXPECT_EQ(BinFiles(dir.path() / "c" / "method").size(), 1u);
}

}  // namespace
}  // namespace arenarpc
