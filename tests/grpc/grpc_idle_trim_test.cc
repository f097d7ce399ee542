// ServerOptions::idle_trim and max_pooled_bytes (src/grpc/idle_trim.cc):
// both are process-wide, and ctest runs each test in a process of its own.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "arenarpc/grpc/allocators.h"
#include "arenarpc/grpc/internal/shadow_meter.h"
#include "arenarpc/grpc/server.h"
#include "arenarpc/grpc/stats.h"
#include "arenarpc/grpc/streaming.h"
#include "arenarpc/page_pool.h"
#include "grpc/grpc_test_util.h"
#include "src/internal/background.h"
#include "test_messages.pb.h"

namespace arenarpc {
namespace {

using test::Record;
using Holder = ::grpc::MessageHolder<Record, Record>;

std::vector<Holder*> AllocateCalls(AllocationMode mode, int n) {
  std::vector<Holder*> holders;
  for (int i = 0; i < n; ++i) {
    holders.push_back(
        DefaultMessageAllocator<Record, Record>(mode)->AllocateMessages());
    holders.back()->request()->set_title(std::string(1000, 'r'));
  }
  return holders;
}

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The background thread is never started (its body is kept, not run): each
// test runs its ticks itself (internal::IdleTrimTickForTesting: the queued
// tasks, then one trim tick) with its own clock, so what a tick does is
// checked right after it, with no sleeping and no waiting.
int threads_asked = 0;
void CountButDoNotStart(std::function<void()>) { ++threads_asked; }

// A thread that serves calls, then stays alive and idle (like a gRPC
// worker) until the object is destroyed.
class IdleWorker {
 public:
  explicit IdleWorker(std::function<void()> serve)
      : thread_([this, serve = std::move(serve)] {
          serve();
          std::unique_lock<std::mutex> lock(mu_);
          served_ = true;
          cv_.notify_all();
          cv_.wait(lock, [&] { return stop_; });
        }) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return served_; });
  }
  ~IdleWorker() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool served_ = false, stop_ = false;
  std::thread thread_;
};

class IdleTrimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    internal::SetBackgroundThreadStarterForTesting(&CountButDoNotStart);
  }
};

TEST_F(IdleTrimTest, TrimsPoolsOnceCallsStop) {
  ServerOptions options(AllocationMode::kReuse);
  options.idle_trim.idle_ms = 100;
  internal::ApplyServerLimits(options);
  EXPECT_EQ(threads_asked, 1);
  // Calls on a thread that then exits: its cached instances and pages go
  // to the depots, where only trimming can give them back.
  std::thread([] {
    for (Holder* h : AllocateCalls(AllocationMode::kReuse, 20)) h->Release();
  }).join();
  ASSERT_GE(DefaultMessagePool<Record>().Stats().idle, 20u);
  ASSERT_GT(PagePool::Default().Stats().pages_in_depot, 0u);

  const Clock::time_point t0 = Clock::now();
  internal::IdleTrimTickForTesting(t0);  // sees the calls
  internal::IdleTrimTickForTesting(t0 + milliseconds(99));
  EXPECT_EQ(GetGrpcStats().idle_trims, 0u) << "trimmed before idle_ms";
  EXPECT_GE(DefaultMessagePool<Record>().Stats().idle, 20u);

  internal::IdleTrimTickForTesting(t0 + milliseconds(100));
  EXPECT_EQ(GetGrpcStats().idle_trims, 1u);
  EXPECT_EQ(DefaultMessagePool<Record>().Stats().idle, 0u);
  EXPECT_EQ(PagePool::Default().Stats().pages_in_depot, 0u);

  // Once per idle period: no call since, no further trim.
  internal::IdleTrimTickForTesting(t0 + milliseconds(10'000));
  EXPECT_EQ(GetGrpcStats().idle_trims, 1u);
  // A call starts a new period.
  for (Holder* h : AllocateCalls(AllocationMode::kReuse, 1)) h->Release();
  internal::IdleTrimTickForTesting(t0 + milliseconds(10'001));
  internal::IdleTrimTickForTesting(t0 + milliseconds(10'101));
  EXPECT_EQ(GetGrpcStats().idle_trims, 2u);
}

// A server that only streams is busy while its messages move: no idle trim
// (a malloc_trim and the pools emptied) lands mid-stream.
TEST_F(IdleTrimTest, StreamedMessagesAreActivity) {
  ServerOptions options(AllocationMode::kHeap);
  options.idle_trim.idle_ms = 100;
  StreamMethod<Record, Record> method("arenarpc.test.Idle/Ingest", options);
  StreamMessages<Record> in = method.Requests();
  const uint64_t trims = GetGrpcStats().idle_trims;
  const Clock::time_point t0 = Clock::now();
  internal::IdleTrimTickForTesting(t0);
  for (int i = 1; i <= 5; ++i) {
    in.Next();  // a message every 60 ms, no unary call
    internal::IdleTrimTickForTesting(t0 + milliseconds(60 * i));
  }
  EXPECT_EQ(GetGrpcStats().idle_trims, trims) << "trimmed mid-stream";
  // The stream goes quiet: one idle period later, the trim.
  internal::IdleTrimTickForTesting(t0 + milliseconds(60 * 5 + 100));
  EXPECT_EQ(GetGrpcStats().idle_trims, trims + 1);
}

// A gRPC worker thread that served calls and then idles keeps its pooled
// arenas and page cache; idle trimming must reach them, not only depots.
TEST_F(IdleTrimTest, ReachesTheCachesOfThreadsThatStayAlive) {
  ServerOptions options(AllocationMode::kArena);
  options.idle_trim.idle_ms = 100;
  IdleWorker worker([] {
    for (Holder* h : AllocateCalls(AllocationMode::kArena, 20)) h->Release();
  });
  ASSERT_GT(PagePool::Default().Stats().pages_cached, 0u);
  internal::ApplyServerLimits(options);
  const Clock::time_point t0 = Clock::now();
  internal::IdleTrimTickForTesting(t0);
  internal::IdleTrimTickForTesting(t0 + milliseconds(100));
  const PagePoolStats s = PagePool::Default().Stats();
  EXPECT_EQ(s.pages_cached, 0u);
  EXPECT_EQ(s.pages_in_use, 0u);
}

// Shadow measurement's samples wait in a queue for the background thread,
// which parses them in every mode after the calls they came from ended,
// often after the idle trim. What it frees then (arena pages into the
// depot) must be trimmed too: its work counts as activity. Seen red with
// BackgroundProgress() left out of Trimmer::Activity() (no second trim).
TEST_F(IdleTrimTest, TrimsAgainAfterTheBackgroundThreadsLastSample) {
  ServerOptions options(AllocationMode::kArena);
  options.idle_trim.idle_ms = 100;
  internal::ApplyServerLimits(options);
  ASSERT_EQ(threads_asked, 1);
  ShadowOptions shadow;
  shadow.sample_one_in = 1;
  shadow.max_cpu_share = 1.0;  // every sample measured
  static auto* const meter = new internal::ShadowMeter(  // as installs'
      "test.Svc/Method", AllocationMode::kHeap, shadow,
      &Record::default_instance(), &Record::default_instance(), nullptr);
  // Many small sub-messages: parsed on arena pages, not in a few strings.
  Record big;
  for (int i = 0; i < 20'000; ++i) big.add_leaves()->add_numbers(i);
  internal::PauseShadowForTest(true);
  ASSERT_TRUE(meter->SubmitBytes(internal::SampleBytes(big.SerializeAsString()),
                                 internal::SampleBytes()));
  ASSERT_EQ(PagePool::Default().BytesHeld(), 0u);

  // The calls ended; the sample waits in the queue: the idle trim runs.
  const Clock::time_point t0 = Clock::now();
  internal::IdleTrimTickForTesting(t0);
  internal::IdleTrimTickForTesting(t0 + milliseconds(100));
  ASSERT_EQ(GetGrpcStats().idle_trims, 1u);
  ASSERT_EQ(internal::QueuedShadowSamplesForTest(), 1u);

  // Then the background thread parses it in every mode (the next tick runs
  // the queued work first); its pages land in the depot.
  internal::PauseShadowForTest(false);
  const Clock::time_point t1 = t0 + milliseconds(1000);
  internal::IdleTrimTickForTesting(t1);
  ASSERT_EQ(internal::QueuedShadowSamplesForTest(), 0u);
  ASSERT_GT(PagePool::Default().BytesHeld(), 0u);
  EXPECT_EQ(GetGrpcStats().idle_trims, 1u) << "trimmed at once";

  // No call since: still a new idle period, trimmed like the first.
  internal::IdleTrimTickForTesting(t1 + milliseconds(100));
  EXPECT_EQ(GetGrpcStats().idle_trims, 2u);
  EXPECT_EQ(PagePool::Default().BytesHeld(), 0u)
      << "the background thread's pages stayed pooled after the idle trim";
}

// A sample's bytes are freed by the background thread, after the call that
// took them: large ones in a mapping of their own (unmapped then), never in
// the call thread's glibc arena, whose top malloc_trim(0) does not reach.
TEST(SampleBytesTest, LargeSamplesAreMappedSmallOnesOnTheHeap) {
  Record small;
  small.set_title("small");
  const internal::SampleBytes s = internal::SampleBytes::Of(small);
  EXPECT_FALSE(s.mapped());
  EXPECT_EQ(s.view(), small.SerializeAsString());

  Record big;
  while (big.ByteSizeLong() < internal::SampleBytes::kMappedBytes) {
    big.add_leaves()->set_text(std::string(1000, 'x'));
  }
  internal::SampleBytes b = internal::SampleBytes::Of(big);
  EXPECT_TRUE(b.mapped());
  EXPECT_EQ(b.view(), big.SerializeAsString());
  internal::SampleBytes moved = std::move(b);
  EXPECT_TRUE(moved.mapped());
  EXPECT_EQ(moved.view(), big.SerializeAsString());
  // A moved-from sample is empty (it owns nothing to unmap).
  EXPECT_EQ(b.size(), 0u);  // NOLINT(bugprone-use-after-move)
  moved = internal::SampleBytes(std::string("as they are"));
  EXPECT_FALSE(moved.mapped());
  EXPECT_EQ(moved.view(), "as they are");
}

TEST_F(IdleTrimTest, OffByDefault) {
  internal::ApplyServerLimits(ServerOptions(AllocationMode::kReuse));
  EXPECT_EQ(threads_asked, 0) << "no trimming, no thread";
  std::thread([] {
    for (Holder* h : AllocateCalls(AllocationMode::kReuse, 20)) h->Release();
  }).join();
  const Clock::time_point t0 = Clock::now();
  internal::IdleTrimTickForTesting(t0);
  internal::IdleTrimTickForTesting(t0 + std::chrono::hours(1));
  EXPECT_EQ(GetGrpcStats().idle_trims, 0u);
  EXPECT_GE(DefaultMessagePool<Record>().Stats().idle, 20u);
}

// The background thread starts lazily (here: the first install with idle
// trimming; else shadow's first sample, on a call thread). When it cannot
// start, the caller goes on without it: counted once, no exception, no
// retry. Seen red with Background::Start()'s `if (started_) return
// running_;` removed (each caller retried and counted again).
void ThrowAsAtTheThreadLimit(std::function<void()>) {
  throw std::system_error(EAGAIN, std::generic_category(),
                          "Resource temporarily unavailable");
}

TEST(BackgroundThreadTest, AFailedStartIsCountedNotThrown) {
  internal::SetBackgroundThreadStarterForTesting(&ThrowAsAtTheThreadLimit);
  ServerOptions options(AllocationMode::kReuse);
  options.idle_trim.idle_ms = 100;
  options.max_pooled_bytes = 1;
  EXPECT_NO_THROW(internal::ApplyServerLimits(options));
  EXPECT_EQ(GetGrpcStats().background_thread_failures, 1u);
  // Calls go on (over the cap: heap messages), and nothing retries.
  std::vector<Holder*> calls;
  EXPECT_NO_THROW(calls = AllocateCalls(AllocationMode::kArena, 3));
  for (Holder* h : calls) h->Release();
  EXPECT_GE(GetGrpcStats().over_cap_heap_calls, 1u);
  EXPECT_EQ(GetGrpcStats().over_cap_trims, 0u) << "no thread, no trim";

  // Shadow's samples, on a call thread: dropped, not queued.
  static auto* const meter = new internal::ShadowMeter(  // as installs'
      "test.Svc/Method", AllocationMode::kArena, {},
      &Record::default_instance(), &Record::default_instance(), nullptr);
  Record r;
  r.set_title("sampled");
  bool queued = true;
  EXPECT_NO_THROW(queued = meter->SubmitBytes(
                      internal::SampleBytes(r.SerializeAsString()),
                      internal::SampleBytes(r.SerializeAsString())));
  EXPECT_FALSE(queued) << "no background thread: the sample is dropped";
  EXPECT_EQ(internal::QueuedShadowSamplesForTest(), 0u);
  EXPECT_FALSE(internal::PostBackground([] {}));
  // One thread, one failure: no other thread was tried.
  EXPECT_EQ(GetGrpcStats().background_thread_failures, 1u);
  EXPECT_NE(RenderPrometheusStats().find(
                "arenarpc_grpc_background_thread_failures_total 1"),
            std::string::npos);
}

TEST_F(IdleTrimTest, OverTheCapCallsGetHeapMessages) {
  ServerOptions options(AllocationMode::kArena);
  options.max_pooled_bytes = 4 * PagePool::Default().page_size();
  internal::ApplyServerLimits(options);
  // Each arena call takes at least two pages (request and response arenas):
  // from the third call on, the pool holds more than the cap.
  std::vector<Holder*> calls = AllocateCalls(AllocationMode::kArena, 10);
  const GrpcStats s = GetGrpcStats();
  const auto heap = static_cast<int>(AllocationMode::kHeap);
  const auto arena = static_cast<int>(AllocationMode::kArena);
  EXPECT_GE(s.modes[arena].in_flight, 1u);
  EXPECT_GE(s.modes[heap].in_flight, 1u);
  EXPECT_EQ(s.modes[heap].in_flight + s.modes[arena].in_flight, 10u);
  EXPECT_EQ(s.over_cap_heap_calls, s.modes[heap].in_flight);
  EXPECT_EQ(threads_asked, 1) << "the cap starts the background thread";
  for (Holder* h : calls) h->Release();
  const GrpcStats after = GetGrpcStats();
  EXPECT_EQ(after.modes[heap].in_flight + after.modes[arena].in_flight, 0u);
  EXPECT_NE(
      RenderPrometheusStats().find("arenarpc_grpc_over_cap_heap_calls_total " +
                                   std::to_string(s.over_cap_heap_calls)),
      std::string::npos);
  // The background thread trims the depots because of the cap (a task
  // posted by the first call over it).
  EXPECT_EQ(GetGrpcStats().over_cap_trims, 0u);
  EXPECT_TRUE(internal::IdleTrimTickForTesting(Clock::now()));
  EXPECT_EQ(GetGrpcStats().over_cap_trims, 1u);
  // Posted once per tick: the next tick has nothing to do.
  EXPECT_FALSE(internal::IdleTrimTickForTesting(Clock::now()));
  EXPECT_EQ(GetGrpcStats().over_cap_trims, 1u);
}

AutoMethodStats AutoStatsOf(const std::string& method) {
  for (const AutoMethodStats& s : GetAutoMethodStats()) {
    if (s.method == method) return s;
  }
  return {};
}

// What kAuto's learner has taken in of a method's trials.
uint64_t TrialsSeen(const std::string& method) {
  const AutoMethodStats s = AutoStatsOf(method);
  return s.timed_calls + s.warming_calls + s.lost_calls + s.failed_calls;
}

// Over the cap every call of a kAuto method gets heap messages and no trial
// is handed out (one would be a heap call timed as another mode's); once
// under the cap again, learning goes on. Seen red with the allocator asking
// ModeForCall() before the cap (the trial's mode then replaced by heap):
// the learner observed heap calls as trials.
TEST_F(IdleTrimTest, OverTheCapAnAutoMethodHandsOutNoTrial) {
  const std::string name = "arenarpc.test.Idle/Auto";
  ServerOptions auto_options(AllocationMode::kAuto);
  auto_options.automatic.max_cpu_share = 1.0;  // every call may be a trial
  // Never destroyed, as installs' allocators.
  static auto* const allocator =
      new MeteredMessageAllocator<Record, Record>(name, auto_options);
  auto call = [&] {
    auto* h = allocator->AllocateMessages();
    h->request()->set_title(std::string(1000, 'r'));
    h->response()->set_title("done");
    h->Release();  // on the allocating thread: a callback trial counts
  };
  // Under the cap (none yet): trials.
  for (int i = 0; i < 6; ++i) call();
  const uint64_t learned = TrialsSeen(name);
  ASSERT_GT(learned, 0u);
  ASSERT_FALSE(AutoStatsOf(name).settled);

  // Over the cap: arena calls held in flight until the pool holds more.
  ServerOptions options(AllocationMode::kArena);
  options.max_pooled_bytes =
      PagePool::Default().BytesHeld() + 8 * PagePool::Default().page_size();
  internal::ApplyServerLimits(options);
  std::vector<Holder*> held;
  while (!internal::OverPooledCap() && held.size() < 1000) {
    for (Holder* h : AllocateCalls(AllocationMode::kArena, 1))
      held.push_back(h);
  }
  ASSERT_TRUE(internal::OverPooledCap());
  const auto heap = static_cast<int>(AllocationMode::kHeap);
  const uint64_t heap_calls = GetGrpcStats().modes[heap].calls;
  for (int i = 0; i < 50; ++i) call();
  EXPECT_EQ(GetGrpcStats().modes[heap].calls, heap_calls + 50);
  EXPECT_EQ(TrialsSeen(name), learned) << "a trial handed out over the cap";
  EXPECT_FALSE(AutoStatsOf(name).settled);

  // Under the cap again: learning resumes.
  for (Holder* h : held) h->Release();
  DefaultMessagePool<Record>().Trim();
  DefaultMessagePool<Record>().ReleaseIdleCaches(milliseconds(0));
  internal::ReleaseIdleArenasAndPages(milliseconds(0));
  ASSERT_FALSE(internal::OverPooledCap());
  call();
  EXPECT_GT(TrialsSeen(name), learned);
}

// After a burst, the threads that served it go idle but stay alive (a gRPC
// thread pool): the reuse instances they cached hold pooled pages. The cap
// must recover once they are idle, not stay tripped by their caches.
TEST_F(IdleTrimTest, CapRecoversOnceTheBurstsThreadsAreIdle) {
  ServerOptions options(AllocationMode::kReuse);
  options.idle_trim.idle_ms = 100;
  options.max_pooled_bytes = 2 * PagePool::Default().page_size();
  internal::ApplyServerLimits(options);
  std::vector<std::unique_ptr<IdleWorker>> burst;
  for (int t = 0; t < 4; ++t) {
    burst.push_back(std::make_unique<IdleWorker>([] {
      // Before the cap trips, reuse instances go to this thread's cache.
      for (Holder* h : AllocateCalls(AllocationMode::kReuse, 4)) h->Release();
    }));
  }
  ASSERT_TRUE(internal::OverPooledCap());
  ASSERT_GT(DefaultMessagePool<Record>().Stats().idle, 0u);
  const Clock::time_point t0 = Clock::now();
  internal::IdleTrimTickForTesting(t0);
  internal::IdleTrimTickForTesting(t0 + milliseconds(100));
  ASSERT_GE(GetGrpcStats().idle_trims, 1u);
  EXPECT_EQ(DefaultMessagePool<Record>().Stats().idle, 0u);
  EXPECT_LE(PagePool::Default().BytesHeld(), options.max_pooled_bytes);
  EXPECT_FALSE(internal::OverPooledCap()) << "the cap stayed tripped";
  // New calls are pooled again.
  const uint64_t heap_calls = GetGrpcStats().over_cap_heap_calls;
  for (Holder* h : AllocateCalls(AllocationMode::kReuse, 1)) h->Release();
  EXPECT_EQ(GetGrpcStats().over_cap_heap_calls, heap_calls);
}

TEST(PooledCapTest, NoCapNoFallback) {
  std::vector<Holder*> calls = AllocateCalls(AllocationMode::kArena, 10);
  EXPECT_EQ(GetGrpcStats().over_cap_heap_calls, 0u);
  for (Holder* h : calls) h->Release();
}

}  // namespace
}  // namespace arenarpc
