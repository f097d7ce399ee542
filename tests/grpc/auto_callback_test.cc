// kAuto on the real calls of callback-API methods: gRPC's callback handler
// makes a call's messages, parses, runs the handler and usually releases
// on one thread, so a trial is timed there; released on another thread (or
// around another call's holder) it is lost, and a method whose window of
// 32 callback trials is mostly lost pauses learning until its re-check
// (`untimed`).
// Own binary: kAuto's budget is process-wide (the smallest share wins, so
// the tiny-share test runs last).
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "arenarpc/grpc/install.h"
#include "arenarpc/grpc/internal/auto_call.h"
#include "arenarpc/grpc/stats.h"
#include "echo_service.h"
#include "grpc/grpc_test_util.h"
#include "src/internal/auto_learner.h"

namespace arenarpc {
namespace {

using echo::EchoRequest;
using echo::EchoResponse;
using echo::EchoService;
using testing::MeasuredStatsOf;
using testing::RealCallsOptions;
using testing::WaitFor;

bool Call(EchoService::Stub& stub, int delay_ms) {
  grpc::ClientContext context;
  EchoRequest request;
  echo::BuildEchoRequest(20, 1, &request);
  request.set_delay_ms(delay_ms);
  EchoResponse response;
  return stub.Echo(&context, request, &response).ok();
}

// What a method's trials came to so far: every trial ends as one of these.
uint64_t TrialsEnded(const MeasuredMethodStats& s) {
  return s.timed_calls + s.warming_calls + s.lost_calls + s.failed_calls;
}

// Calls one at a time, finished in the handler: gRPC releases the holder
// on the thread that made it, so the method settles on timed calls.
TEST(AutoCallbackTest, SettlesOnTimedCallbackCalls) {
  testing::EchoServer server(RealCallsOptions());
  auto stub = EchoService::NewStub(server.NewChannel());
  const std::string method = "arenarpc.echo.EchoService/Echo";
  for (int i = 0; i < 2000 && !MeasuredStatsOf(method).settled; ++i) {
    ASSERT_TRUE(Call(*stub, 0));
  }
  // gRPC releases a call's messages after the client has its response:
  // the settling call's bookkeeping may still be under way.
  MeasuredMethodStats s;
  EXPECT_TRUE(WaitFor([&] {
    s = MeasuredStatsOf(method);
    return s.decisions > 0;
  }));
  EXPECT_TRUE(s.settled);
  EXPECT_FALSE(s.untimed);
  // Learned (with heap held out by the prior: request and response carry
  // ~50 KB together).
  EXPECT_TRUE(s.decision_source == DecisionSource::kLearned ||
              s.decision_source == DecisionSource::kPrior);
  // A decision observes at least min_calls (6) of each mode it kept.
  EXPECT_GE(s.timed_calls, 12u);
  EXPECT_GT(s.settle_calls, 0u);
  EXPECT_LT(s.lost_calls, s.timed_calls);
}

// A callback echo method installed as `method`, served on a local port.
class InstalledEcho {
 public:
  explicit InstalledEcho(const std::string& method)
      : install_(InstallCallbackMethod(
            &service_, RealCallsOptions(), method,
            &EchoService::CallbackService::SetMessageAllocatorFor_Echo)) {
    if (install_.served) local_ = testing::StartLocalEcho(&service_);
  }
  ~InstalledEcho() {
    if (local_.server == nullptr) return;
    local_.server->Shutdown(std::chrono::system_clock::now());
    service_.Stop();
    local_.server->Wait();
  }
  const MethodInstall& install() const { return install_; }
  EchoService::Stub* stub() const { return local_.stub.get(); }

 private:
  echo::EchoServiceImpl service_;
  MethodInstall install_;
  testing::LocalEcho local_;
};

// A handler that finishes from another thread (delay_ms: the service's
// finisher thread calls Finish), 4 calls in flight: holders are released
// off the thread that made them, or after it made another call's, so the
// trials are lost; once more than half of a window of 32 is lost the
// method pauses learning (in the cheapest mode with enough timed calls, or
// the mode it had) and hands out no trials before its re-check.
// (One call at a time is not enough: a gRPC thread with nothing else to do
// often releases the holder itself.)
TEST(AutoCallbackTest, CallsFinishedOnAnotherThreadStopLearning) {
  const std::string method = "t.Moved/Echo";
  InstalledEcho echo(method);
  ASSERT_TRUE(echo.install().served) << echo.install().reason;
  ASSERT_NE(echo.stub(), nullptr);
  std::atomic<int> failed{0};
  auto calls = [&](int per_caller, bool until_untimed) {
    std::vector<std::thread> callers;
    for (int c = 0; c < 4; ++c) {
      callers.emplace_back([&] {
        for (int i = 0; i < per_caller; ++i) {
          if (until_untimed && MeasuredStatsOf(method).untimed) return;
          if (!Call(*echo.stub(), 1)) failed.fetch_add(1);
        }
      });
    }
    for (std::thread& t : callers) t.join();
  };
  calls(500, /*until_untimed=*/true);
  ASSERT_EQ(failed.load(), 0);
  // Every call's holder released (and its trial ended).
  ASSERT_TRUE(
      WaitFor([] { return testing::InFlight(AllocationMode::kAuto) == 0; }));
  const MeasuredMethodStats s = MeasuredStatsOf(method);
  ASSERT_TRUE(s.untimed);
  EXPECT_GT(s.lost_calls, 16u);
  EXPECT_GT(s.lost_calls, s.timed_calls);
  EXPECT_EQ(s.decisions, 0u);
  // From now on: no trials, the same mode.
  calls(10, /*until_untimed=*/false);
  ASSERT_EQ(failed.load(), 0);
  ASSERT_TRUE(
      WaitFor([] { return testing::InFlight(AllocationMode::kAuto) == 0; }));
  const MeasuredMethodStats after = MeasuredStatsOf(method);
  EXPECT_TRUE(after.untimed);
  EXPECT_EQ(TrialsEnded(after), TrialsEnded(s));
  EXPECT_EQ(after.mode, s.mode);
  EXPECT_EQ(after.decisions, 0u);
}

// A callback or async trial walks its request for its size (ByteSizeLong):
// once the sizes agree only 1 trial of a mode in 8 does, the others take the
// agreed size; sizes that disagree are walked on every trial. The learner
// gets the request's bytes either way, so the prior still holds heap out of
// large calls. Seen red with every trial walking (ModeForCall setting
// size_request on each).
TEST(AutoCallbackTest, AgreeingRequestSizesAreWalkedOneTrialInEight) {
  AutoOptions automatic;
  automatic.max_cpu_share = 1.0;
  automatic.recheck_after_s = 0;  // one decision after another: every call
  auto* method = new internal::AutoMethod(  // never destroyed, as installs
      "/t.Sizes/Echo", automatic, EchoRequest::descriptor(),
      EchoResponse::descriptor(), nullptr);
  EchoRequest large;
  echo::BuildEchoRequest(100, 1, &large);
  EchoRequest larger;
  echo::BuildEchoRequest(110, 2, &larger);
  ASSERT_GT(large.ByteSizeLong(), 64u << 10);  // over the prior's 48 KiB
  ASSERT_GT(larger.ByteSizeLong(), large.ByteSizeLong() * 65 / 64);
  // `n` callback trials of `requests` in turn; returns how many walked.
  auto trials = [&](int n, std::vector<const EchoRequest*> requests) {
    int walked = 0;
    for (int i = 0; i < n; ++i) {
      const EchoRequest& request = *requests[i % requests.size()];
      internal::CallTiming t;
      const AllocationMode mode =
          method->ModeForCall(internal::CallKind::kCallback, 0, &t);
      EXPECT_NE(t.method, nullptr);
      EXPECT_NE(mode, AllocationMode::kHeap);
      if (t.method == nullptr) continue;
      if (t.size_request) {
        t.SizeRequest(&request, nullptr);
        ++walked;
      }
      method->Observe(t, (mode == AllocationMode::kReuse ? 1.0 : 1.1) *
                             static_cast<double>(request.ByteSizeLong()));
      if (requests.size() == 1) {
        EXPECT_DOUBLE_EQ(t.bytes, static_cast<double>(request.ByteSizeLong()));
      }
    }
    return walked;
  };
  const int agreeing = trials(400, {&large});
  EXPECT_GT(agreeing, 8 + 400 / 8 - 16);  // 8 to agree, then the checks
  EXPECT_LT(agreeing, 8 + 400 / 8 + 16);
  // Sizes that disagree: once a check saw one, every trial walks.
  EXPECT_GT(trials(100, {&large, &larger}), 100 / 2);
  EXPECT_EQ(trials(100, {&large, &larger}), 100);
  const MeasuredMethodStats s = MeasuredStatsOf("/t.Sizes/Echo");
  EXPECT_GT(s.decisions, 1u);
  EXPECT_EQ(s.prior_decisions, s.decisions);
  EXPECT_EQ(s.mode, AllocationMode::kReuse);
}

// The budget holds on callback calls: a call is a trial only while what
// learning spent fits the share, so the bill ends within the share, the
// credit and the one trial in flight. Last in this binary: its tiny share
// becomes the process's (the smallest wins).
TEST(AutoCallbackTest, TimedCallbackCallsKeepToTheBudget) {
  ServerOptions options = RealCallsOptions();
  options.automatic.max_cpu_share = 0.001;
  MeteredMessageAllocator<EchoRequest, EchoResponse> allocator("/t.C/Budget",
                                                               options);
  EchoRequest request;
  echo::BuildEchoRequest(5, 1, &request);
  const std::string bytes = request.SerializeAsString();
  // heap 20 ms, arena 10 ms, reuse 2 ms of CPU a call: without a budget,
  // heap's and arena's trials would bill 18 and 8 ms each until dropped
  // (5 or more of each).
  const std::array<double, kNumAllocationModes> cost = {20e6, 10e6, 2e6};
  auto process_cpu_ns = [] {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e9 +
           static_cast<double>(ts.tv_nsec);
  };
  const double spent_before = GetMeasuringCost().learning_cpu_s * 1e9;
  for (int call = 0; call < 100; ++call) {
    auto* holder = allocator.AllocateMessages();
    ASSERT_TRUE(holder->request()->ParseFromString(bytes));
    testing::BurnCpu(cost[static_cast<int>(testing::HolderMode(holder))]);
    holder->Release();
  }
  // What the tests above spent on a share of 1.0 may be over this share's
  // room already: then no trial at all.
  const double room =
      std::max(spent_before,
               0.001 * process_cpu_ns() + internal::LearningBudget::kCreditNs);
  EXPECT_LE(GetMeasuringCost().learning_cpu_s * 1e9, room + 18e6);
}

}  // namespace
}  // namespace arenarpc
