// Shadow measurement (ServerOptions::shadow): responses unchanged, bounded
// queue that drops instead of waiting, malformed samples counted, captures
// bounded and readable by arenarpc_advise, and a kAuto method measured by
// shadow while its learner sees only its real calls. The background thread
// is never started: the tests run its work (the samples' parses)
// themselves, with internal::RunBackgroundOnce().
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "arenarpc/grpc/internal/shadow_meter.h"
#include "arenarpc/grpc/server.h"
#include "arenarpc/grpc/stats.h"
#include "grpc/grpc_test_util.h"
#include "src/internal/background.h"

namespace arenarpc {
namespace {

namespace fs = std::filesystem;
using ::arenarpc::echo::EchoRequest;
using ::arenarpc::echo::EchoResponse;
using ::arenarpc::testing::EchoServer;
using ::arenarpc::testing::WaitFor;
using internal::SampleBytes;
using internal::ShadowMeter;

void KeepTheBody(std::function<void()>) {}
const bool kept_the_body = [] {
  internal::SetBackgroundThreadStarterForTesting(&KeepTheBody);
  return true;
}();

// The background thread's work: the queued samples parsed.
void RunBackground() {
  EXPECT_TRUE(kept_the_body);
  internal::RunBackgroundOnce();
}

// Waits (bounded) for `done`, running the background thread's work in
// between.
bool RunBackgroundUntil(const std::function<bool()>& done) {
  return WaitFor([&] {
    RunBackground();
    return done();
  });
}

// Shadow's stats of `method` installed in `mode` (a method may be measured
// in several modes in one process).
MeasuredMethodStats StatsOf(const std::string& method,
                            AllocationMode mode = AllocationMode::kArena) {
  for (const MeasuredMethodStats& s : GetGrpcStats().shadow_methods) {
    if (s.method == method && s.mode == mode) return s;
  }
  return {};
}

AutoMethodStats AutoStatsOf(const std::string& method) {
  for (const AutoMethodStats& s : GetAutoMethodStats()) {
    if (s.method == method) return s;
  }
  return {};
}

// A meter never destroyed (queued samples point to it), as installs make;
// kept reachable here.
ShadowMeter& NewMeter(const std::string& name, AllocationMode mode,
                      const ShadowOptions& options) {
  static auto* const meters = new std::vector<ShadowMeter*>();
  meters->push_back(
      new ShadowMeter(name, mode, options, &EchoRequest::default_instance(),
                      &EchoResponse::default_instance(), nullptr));
  return *meters->back();
}

bool Submit(ShadowMeter& meter, const std::string& request,
            const std::string& response = "") {
  return meter.SubmitBytes(SampleBytes(request), SampleBytes(response));
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
  ASSERT_TRUE(RunBackgroundUntil(
      [&] { return StatsOf(method, GetParam()).samples > 0; }));
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
  // The queue holds 4 samples, so it may have dropped some of the 12: send
  // the same requests again (each 20 ms) until 5 are captured.
  uint32_t resend = 0;
  auto last = std::chrono::steady_clock::now();
  ASSERT_TRUE(RunBackgroundUntil([&] {
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

// Seen red with Shadow::Push's bound (`queue_.size() >= kMaxQueued`) made
// false (the 10 more were queued).
TEST(ShadowTest, DropsInsteadOfWaitingWhenTheQueueIsFull) {
  ShadowMeter& meter =
      NewMeter("test/QueueFull", AllocationMode::kArena, Measured());
  const std::string bytes = Request(1, 3).SerializeAsString();
  RunBackground();
  ASSERT_EQ(internal::QueuedShadowSamplesForTest(), 0u);
  internal::PauseShadowForTest(true);
  int queued = 0;
  for (int i = 0; i < 4; ++i) queued += Submit(meter, bytes) ? 1 : 0;
  int refused = 0;
  for (int i = 0; i < 10; ++i) refused += Submit(meter, bytes) ? 0 : 1;
  // While the queue is full the meter does not even sample.
  int sampled = 0;
  for (int i = 0; i < 100; ++i) sampled += meter.ShouldSample() ? 1 : 0;
  EXPECT_EQ(internal::QueuedShadowSamplesForTest(), 4u);
  // Paused: the background thread's work leaves them queued.
  RunBackground();
  EXPECT_EQ(internal::QueuedShadowSamplesForTest(), 4u);
  EXPECT_EQ(StatsOf("test/QueueFull").samples, 0u);
  internal::PauseShadowForTest(false);
  EXPECT_EQ(queued, 4);  // the queue's bound
  EXPECT_EQ(refused, 10);
  EXPECT_EQ(sampled, 0);
  EXPECT_EQ(StatsOf("test/QueueFull").dropped, 10u + 100u);
  RunBackground();
  EXPECT_EQ(internal::QueuedShadowSamplesForTest(), 0u);
  EXPECT_EQ(StatsOf("test/QueueFull").samples, 4u);
}

TEST(ShadowTest, MalformedSampledBytesAreCountedAndDropped) {
  TempDir dir("arenarpc_shadow_malformed");
  ShadowOptions o = Measured();
  o.capture_dir = dir.path().string();
  ShadowMeter& meter = NewMeter("test/Malformed", AllocationMode::kHeap, o);
  // A truncated length-delimited field, then a valid request.
  ASSERT_TRUE(Submit(meter, "\x0a\xff\xff\x03"));
  ASSERT_TRUE(Submit(meter, Request(1, 5).SerializeAsString()));
  RunBackground();
  const MeasuredMethodStats s =
      StatsOf("test/Malformed", AllocationMode::kHeap);
  EXPECT_EQ(s.samples, 1u);  // the request that parses
  EXPECT_EQ(s.malformed, 1u);
  EXPECT_EQ(s.captured, 1u);  // only the request that parses
  EXPECT_EQ(BinFiles(dir.path() / "test.Malformed").size(), 1u);
}

TEST(ShadowTest, CaptureIsBoundedByFilesAndBytesAcrossRestarts) {
  TempDir dir("arenarpc_shadow_bounds");
  const std::string bytes = Request(2, 9).SerializeAsString();
  auto submit_all = [&](ShadowMeter& meter, const std::string& name,
                        AllocationMode mode, int n) {
    for (int i = 0; i < n; ++i) {
      const uint64_t before = StatsOf(name, mode).samples;
      ASSERT_TRUE(Submit(meter, bytes));
      RunBackground();
      ASSERT_EQ(StatsOf(name, mode).samples, before + 1);
    }
  };
  ShadowOptions by_files = Measured();
  by_files.capture_dir = dir.path().string();
  by_files.capture_max_files = 3;
  ShadowMeter& files =
      NewMeter("/x.Files/Get", AllocationMode::kArena, by_files);
  submit_all(files, "/x.Files/Get", AllocationMode::kArena, 5);
  EXPECT_EQ(BinFiles(dir.path() / "x.Files.Get").size(), 3u);
  EXPECT_EQ(StatsOf("/x.Files/Get").captured, 3u);

  ShadowOptions by_bytes = Measured();
  by_bytes.capture_dir = dir.path().string();
  by_bytes.capture_max_bytes = 2 * bytes.size() + 1;
  ShadowMeter& sized =
      NewMeter("/x.Bytes/Get", AllocationMode::kArena, by_bytes);
  submit_all(sized, "/x.Bytes/Get", AllocationMode::kArena, 4);
  EXPECT_EQ(BinFiles(dir.path() / "x.Bytes.Get").size(), 2u);

  // A restarted server (a new meter on the same directory) counts what is
  // there: the method's directory stays within its bound.
  ShadowMeter& again =
      NewMeter("/x.Files/Get", AllocationMode::kHeap, by_files);
  submit_all(again, "/x.Files/Get", AllocationMode::kHeap, 2);
  EXPECT_EQ(BinFiles(dir.path() / "x.Files.Get").size(), 3u);
}

// Method names become single directory names, never a way out of the
// capture directory.
TEST(ShadowTest, CaptureDirectoryNamesStayInside) {
  TempDir dir("arenarpc_shadow_names");
  ShadowOptions o = Measured();
  o.capture_dir = (dir.path() / "c").string();
  ShadowMeter& meter = NewMeter("/../..", AllocationMode::kArena, o);
  ASSERT_TRUE(Submit(meter, Request(1, 1).SerializeAsString()));
  RunBackground();
  EXPECT_EQ(StatsOf("/../..").captured, 1u);
  EXPECT_EQ(BinFiles(dir.path() / "c" / "method").size(), 1u);
}

// A kAuto method with shadow on: shadow parses every call in every mode
// (heap too) and reports it under the mode auto runs it in, while auto's
// learner sees only the method's real calls. With calls of 48 KiB and more
// (the prior) auto never puts heap on trial: no call runs in heap, its
// decision has no heap cost and comes from the prior. Seen red with
// shadow's samples fed to the method's learner (AutoMethod::Observe with
// the sample's request bytes, from Shadow::Measure): heap was taken in.
TEST(ShadowAutoTest, ShadowMeasuresAnAutoMethodWithoutFeedingItsLearner) {
  const std::string method = "arenarpc.echo.EchoService/Echo";
  ServerOptions options(AllocationMode::kAuto);
  options.automatic.max_cpu_share = 1.0;  // every call may be a trial
  options.shadow = Measured();            // every call sampled
  testing::EchoServer server(options, 4 << 20, ServerApi::kSync);
  auto stub = echo::EchoService::NewStub(server.NewChannel());
  const EchoRequest request = Request(24, 7);
  // Request and response of a call: over the prior's 48 KiB.
  ASSERT_GE(2 * request.ByteSizeLong(), size_t{48} << 10);
  const auto heap = static_cast<int>(AllocationMode::kHeap);
  const uint64_t heap_calls = GetGrpcStats().modes[heap].calls;
  const uint64_t calls_before = testing::Calls(AllocationMode::kAuto);
  int calls = 0;
  while (calls < 400 && !AutoStatsOf(method).settled) {
    grpc::ClientContext context;
    EchoResponse response;
    ASSERT_TRUE(stub->Echo(&context, request, &response).ok());
    ++calls;
    RunBackground();  // shadow parses the calls sampled so far
  }
  ASSERT_TRUE(WaitFor([&] {
    return testing::Calls(AllocationMode::kAuto) - calls_before ==
           static_cast<uint64_t>(calls);
  }));
  RunBackground();
  const AutoMethodStats a = AutoStatsOf(method);
  ASSERT_TRUE(a.settled) << calls << " calls";
  EXPECT_EQ(a.decision_source, DecisionSource::kPrior);
  EXPECT_EQ(a.cost_us[heap], 0);
  EXPECT_NE(a.mode, AllocationMode::kHeap);
  EXPECT_GT(a.timed_calls, 0u);
  // Only real calls reach the learner: at most one observation a call.
  EXPECT_LE(a.timed_calls + a.warming_calls + a.lost_calls + a.failed_calls,
            static_cast<uint64_t>(calls));
  EXPECT_EQ(GetGrpcStats().modes[heap].calls, heap_calls)
      << "a call ran in heap";
  // Shadow measured the method, every mode (heap too), under auto's mode.
  const MeasuredMethodStats s = StatsOf(method, a.mode);
  EXPECT_FALSE(s.automatic);
  EXPECT_GT(s.samples, 0u);
  for (double c : s.cost_us) EXPECT_GT(c, 0);
  EXPECT_EQ(s.malformed, 0u);
}

}  // namespace
}  // namespace arenarpc
