// arenarpc::grpc without a server: allocators and FreeRequest() in each
// mode, the install helpers, stats and their Prometheus rendering, the
// client call scope and the stream arena.
#include <google/protobuf/arena.h>
#include <gtest/gtest.h>

#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "arenarpc/grpc/client.h"
#include "arenarpc/grpc/install.h"
#include "arenarpc/grpc/stats.h"
#include "arenarpc/grpc/stream.h"
#include "echo_service.h"
#include "grpc/grpc_test_util.h"

namespace arenarpc {
namespace {

using echo::EchoRequest;
using echo::EchoResponse;
using testing::Calls;
using testing::InFlight;

TEST(AllocationModeTest, ParsesAndNames) {
  for (AllocationMode m : {AllocationMode::kHeap, AllocationMode::kArena,
                           AllocationMode::kReuse, AllocationMode::kAuto}) {
    absl::StatusOr<AllocationMode> parsed =
        ParseAllocationMode(AllocationModeName(m));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, m);
    EXPECT_EQ(EffectiveAllocationMode(m), m);  // no kill switch here
  }
  EXPECT_FALSE(ParseAllocationMode("Arena").ok());
  EXPECT_FALSE(ParseAllocationMode("").ok());
  EXPECT_FALSE(ArenasDisabled());
}

class AllocatorTest : public ::testing::TestWithParam<AllocationMode> {};

TEST_P(AllocatorTest, HolderLifecycleAndFreeRequest) {
  const AllocationMode mode = GetParam();
  auto* allocator = DefaultMessageAllocator<EchoRequest, EchoResponse>(mode);
  ASSERT_NE(allocator, nullptr);
  EXPECT_EQ(allocator,
            (DefaultMessageAllocator<EchoRequest, EchoResponse>(mode)));
  const GrpcModeStats before = testing::ModeStats(mode);
  const MessagePoolStats req_pool = DefaultMessagePool<EchoRequest>().Stats();

  auto* holder = allocator->AllocateMessages();
  // kAuto: learning on the real calls (a callback call, the default
  // kRealCalls), its first calls are served in turn in each mode.
  AllocationMode concrete = mode;
  if (mode == AllocationMode::kAuto) {
    concrete =
        dynamic_cast<internal::ArenaHolder<EchoRequest, EchoResponse>*>(
            holder) != nullptr
            ? AllocationMode::kArena
        : dynamic_cast<internal::ReuseHolder<EchoRequest, EchoResponse>*>(
              holder) != nullptr
            ? AllocationMode::kReuse
            : AllocationMode::kHeap;
  }
  ASSERT_NE(holder->request(), nullptr);
  ASSERT_NE(holder->response(), nullptr);
  EXPECT_EQ(InFlight(mode), before.in_flight + 1);
  if (concrete == AllocationMode::kArena) {
    ASSERT_NE(holder->request()->GetArena(), nullptr);
    ASSERT_NE(holder->response()->GetArena(), nullptr);
    // Two arenas: FreeRequest() can give the request's pages back.
    EXPECT_NE(holder->request()->GetArena(), holder->response()->GetArena());
  } else if (concrete == AllocationMode::kReuse) {
    // Each pooled instance lives on an arena of its own.
    ASSERT_NE(holder->request()->GetArena(), nullptr);
    EXPECT_NE(holder->request()->GetArena(), holder->response()->GetArena());
  } else {
    EXPECT_EQ(holder->request()->GetArena(), nullptr);
    EXPECT_EQ(holder->response()->GetArena(), nullptr);
  }
  if (concrete == AllocationMode::kReuse) {
    EXPECT_EQ(DefaultMessagePool<EchoRequest>().Stats().in_use,
              req_pool.in_use + 1);
  }
  echo::BuildEchoRequest(20, 1, holder->request());
  holder->response()->mutable_payload()->CopyFrom(holder->request()->payload());

  holder->FreeRequest();
  EXPECT_EQ(holder->request(), nullptr);
  holder->FreeRequest();  // twice is harmless
  if (concrete == AllocationMode::kReuse) {
    EXPECT_EQ(DefaultMessagePool<EchoRequest>().Stats().in_use,
              req_pool.in_use);
  }
  EXPECT_EQ(holder->response()->payload_size(), 200);
  holder->Release();

  const GrpcModeStats after = testing::ModeStats(mode);
  EXPECT_EQ(after.calls, before.calls + 1);
  EXPECT_EQ(after.in_flight, before.in_flight);
  EXPECT_EQ(after.free_request_calls, before.free_request_calls + 1);
  if (concrete == AllocationMode::kArena) {
    EXPECT_GT(after.arena_bytes_sum, before.arena_bytes_sum);
    if (mode == AllocationMode::kArena) {
      EXPECT_GT(after.arena_bytes_p50, 0u);
    }
  }
}

TEST_P(AllocatorTest, ReleaseWithoutFreeRequest) {
  const AllocationMode mode = GetParam();
  auto* allocator = DefaultMessageAllocator<EchoRequest, EchoResponse>(mode);
  const uint64_t in_flight = InFlight(mode);
  const uint64_t pool_in_use =
      DefaultMessagePool<EchoResponse>().Stats().in_use;
  for (int i = 0; i < 50; ++i) {
    auto* holder = allocator->AllocateMessages();
    // A message left by a previous call never shows through.
    EXPECT_EQ(holder->request()->ByteSizeLong(), 0u);
    EXPECT_EQ(holder->response()->ByteSizeLong(), 0u);
    echo::BuildEchoRequest(2, i, holder->request());
    // A std::string, not "x": gcc 12 -O2 warns (-Wrestrict, a false
    // positive) on assigning a literal through the generated setter.
    holder->response()->add_payload(std::string("x"));
    holder->Release();
  }
  EXPECT_EQ(InFlight(mode), in_flight);
  EXPECT_EQ(DefaultMessagePool<EchoResponse>().Stats().in_use, pool_in_use);
  if (mode == AllocationMode::kReuse) {
    EXPECT_GT(GetGrpcStats().reuse_hits, 0u);
  }
}

// The sync adapter's RequestDone() (once the handler returned): the
// request is freed, as FreeRequest() frees it, but not counted as the
// handler's FreeRequest().
TEST_P(AllocatorTest, RequestDoneFreesTheRequestUncounted) {
  const AllocationMode mode = GetParam();
  const GrpcModeStats before = testing::ModeStats(mode);
  auto* holder = dynamic_cast<internal::CallHolder<EchoRequest, EchoResponse>*>(
      DefaultMessageAllocator<EchoRequest, EchoResponse>(mode)
          ->AllocateMessages());
  ASSERT_NE(holder, nullptr);
  const bool reuse =
      dynamic_cast<internal::ReuseHolder<EchoRequest, EchoResponse>*>(holder) !=
      nullptr;
  const uint64_t in_use = DefaultMessagePool<EchoRequest>().Stats().in_use;
  echo::BuildEchoRequest(5, 1, holder->request());
  holder->RequestDone();
  EXPECT_EQ(holder->request(), nullptr);
  if (reuse) {
    EXPECT_EQ(DefaultMessagePool<EchoRequest>().Stats().in_use, in_use - 1);
  }
  holder->RequestDone();  // twice is harmless
  holder->Release();
  const GrpcModeStats after = testing::ModeStats(mode);
  EXPECT_EQ(after.calls, before.calls + 1);
  EXPECT_EQ(after.free_request_calls, before.free_request_calls);
}

INSTANTIATE_TEST_SUITE_P(Modes, AllocatorTest, testing::AllModes(),
                         testing::ModeTestName);

TEST(InstallTest, PluginAndTemplateInstallTheSameAllocator) {
  echo::EchoServiceImpl a;
  EXPECT_EQ(
      echo::InstallEchoServiceAllocators(&a, AllocationMode::kArena).served(),
      1);
  echo::EchoServiceImpl b;
  EXPECT_EQ(
      InstallMessageAllocators(
          &b, AllocationMode::kReuse,
          &echo::EchoService::CallbackService::SetMessageAllocatorFor_Echo)
          .served(),
      1);
}

// A destroyed pool leaves the stats registry: nothing reads it afterwards
// (before the fix: a heap-use-after-free under ASan, the name still listed).
TEST(PrometheusTest, DestroyedPoolLeavesTheStats) {
  auto pool = std::make_unique<MessagePool<echo::Item>>();
  RegisterMessagePoolStats("test.Gone", pool.get());
  { auto item = pool->Acquire(); }
  EXPECT_NE(RenderPrometheusStats().find("test.Gone"), std::string::npos);
  pool.reset();
  EXPECT_EQ(RenderPrometheusStats().find("test.Gone"), std::string::npos);
  for (const NamedMessagePoolStats& p : GetMessagePoolStats()) {
    EXPECT_NE(p.name, "test.Gone");
  }
}

// Prometheus text format 0.0.4: every family has HELP and TYPE before its
// samples, sample lines are `name{labels} value`, histograms are cumulative.
TEST(PrometheusTest, RendersEveryFamilyWellFormed) {
  // Make sure there is something in each section.
  auto* holder =
      DefaultMessageAllocator<EchoRequest, EchoResponse>(AllocationMode::kArena)
          ->AllocateMessages();
  echo::BuildEchoRequest(5, 1, holder->request());
  holder->Release();
  static MessagePool<echo::Item> items;
  RegisterMessagePoolStats("test.Items \"quoted\"", &items);
  { auto item = items.Acquire(); }

  const std::string text = RenderPrometheusStats();
  std::istringstream in(text);
  std::string line;
  std::set<std::string> typed;
  std::string current;
  const std::regex sample(
      R"(^([a-z_]+)(\{[a-z_]+="([^"\\]|\\.)*"(,[a-z_]+="([^"\\]|\\.)*")*\})? [0-9]+$)");
  std::vector<uint64_t> buckets;
  uint64_t count = 0;
  int samples = 0;
  while (std::getline(in, line)) {
    if (line.rfind("# HELP ", 0) == 0) continue;
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream t(line.substr(7));
      std::string type;
      t >> current >> type;
      EXPECT_TRUE(typed.insert(current).second) << "TYPE twice: " << current;
      EXPECT_TRUE(type == "counter" || type == "gauge" || type == "histogram")
          << line;
      continue;
    }
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, sample)) << line;
    ++samples;
    const std::string name = m[1];
    EXPECT_EQ(name.rfind(current, 0), 0u) << name << " outside " << current;
    const uint64_t value = std::stoull(line.substr(line.rfind(' ') + 1));
    if (name == "arenarpc_grpc_arena_bytes_per_call_bucket") {
      if (!buckets.empty()) {
        EXPECT_GE(value, buckets.back());
      }
      buckets.push_back(value);
    }
    if (name == "arenarpc_grpc_arena_bytes_per_call_count") count = value;
  }
  EXPECT_GT(samples, 30);
  EXPECT_EQ(buckets.size(), static_cast<size_t>(kArenaBytesBuckets));
  ASSERT_FALSE(buckets.empty());
  EXPECT_EQ(buckets.back(), count);
  EXPECT_GE(count, 1u);
  for (const char* family :
       {"arenarpc_page_pool_pages_in_use", "arenarpc_arena_acquired_total",
        "arenarpc_message_pool_reuse_hits_total", "arenarpc_grpc_calls_total",
        "arenarpc_grpc_arena_bytes_per_call", "arenarpc_grpc_reuse_hits_total",
        "arenarpc_grpc_reuse_evictions_total", "arenarpc_grpc_stream_arenas",
        "arenarpc_grpc_stream_messages_total"}) {
    EXPECT_TRUE(typed.count(family)) << family;
  }
  EXPECT_NE(text.find("pool=\"test.Items \\\"quoted\\\"\""), std::string::npos);
  EXPECT_NE(text.find("arenarpc_grpc_calls_total{mode=\"arena\"}"),
            std::string::npos);
}

TEST(ClientCallTest, ArenaCallFreesEverythingAfterCallback) {
  const ArenaStats before = GetArenaStats();
  bool ran = false;
  std::function<void(grpc::Status)> callback;
  {
    ClientCall<EchoRequest, EchoResponse> call;
    ASSERT_NE(call.arena(), nullptr);
    EXPECT_EQ(call.request()->GetArena(), call.arena());
    EXPECT_EQ(call.response()->GetArena(), call.arena());
    echo::BuildEchoRequest(3, 1, call.request());
    EchoResponse* response = call.response();
    callback =
        call.Then([&ran, response](const grpc::Status& s, EchoResponse* r) {
          EXPECT_TRUE(s.ok());
          EXPECT_EQ(r, response);
          EXPECT_EQ(r->payload_size(), 1);
          ran = true;
        });
    response->add_payload("still alive after the scope ended");
  }
  EXPECT_EQ(GetArenaStats().arenas_acquired, before.arenas_acquired + 1);
  callback(grpc::Status::OK);  // as gRPC would, on its thread
  EXPECT_TRUE(ran);
}

TEST(ClientCallTest, PooledCallReturnsMessagesAfterCallbackOrWhenDropped) {
  MessagePool<EchoRequest> requests;
  MessagePool<EchoResponse> responses;
  std::function<void(grpc::Status)> callback;
  {
    ClientCall<EchoRequest, EchoResponse> call(requests, responses);
    EXPECT_EQ(call.arena(), nullptr);
    call.request()->add_payload("a");
    callback = call.Then([](const grpc::Status&, EchoResponse*) {});
  }
  EXPECT_EQ(requests.Stats().in_use, 1u);
  callback(grpc::Status(grpc::StatusCode::CANCELLED, ""));
  EXPECT_EQ(requests.Stats().in_use, 0u);
  EXPECT_EQ(responses.Stats().in_use, 0u);
  {
    ClientCall<EchoRequest, EchoResponse> call(requests, responses);
    callback = call.Then([](const grpc::Status&, EchoResponse*) {
      ADD_FAILURE() << "never called";
    });
  }
  callback = nullptr;  // gRPC dropped it unrun: still released
  EXPECT_EQ(requests.Stats().in_use, 0u);
  {
    ClientCall<EchoRequest, EchoResponse> call(requests, responses);
  }  // never started: released with the scope
  EXPECT_EQ(responses.Stats().in_use, 0u);
}

TEST(StreamArenaTest, PingPongRecyclesBetweenMessages) {
  StreamArena arena;
  for (int i = 0; i < 20; ++i) {
    StreamMessage<EchoRequest> request = arena.Create<EchoRequest>();
    echo::BuildEchoRequest(5, i, request.get());
    StreamMessage<EchoResponse> response = arena.Create<EchoResponse>();
    response->mutable_payload()->CopyFrom(request->payload());
    request.reset();
    EXPECT_EQ(response->payload_size(), 50);
  }
  const StreamArenaStats s = arena.Stats();
  EXPECT_EQ(s.messages, 40u);
  EXPECT_EQ(s.generations, 20u);  // a fresh arena per exchange
  EXPECT_EQ(s.live_messages, 0u);
  EXPECT_LE(s.live_generations, 1u);
}

// Every StreamArena summed, exported as arenarpc_grpc_stream_*.
TEST(StreamArenaTest, TotalsAreExported) {
  auto value = [](const std::string& series) -> uint64_t {
    const std::string text = RenderPrometheusStats();
    const size_t at = text.find("\n" + series + " ");
    if (at == std::string::npos) {
      ADD_FAILURE() << series << " missing";
      return 0;
    }
    return std::stoull(text.substr(at + series.size() + 2));
  };
  const StreamArenaTotals before = GetStreamArenaTotals();
  const uint64_t messages = value("arenarpc_grpc_stream_messages_total");
  {
    StreamArena arena;
    StreamMessage<EchoRequest> a = arena.Create<EchoRequest>();
    StreamMessage<EchoResponse> b = arena.Create<EchoResponse>();
    const StreamArenaTotals t = GetStreamArenaTotals();
    EXPECT_EQ(t.streams, before.streams + 1);
    EXPECT_EQ(t.streams_created, before.streams_created + 1);
    EXPECT_EQ(t.messages, before.messages + 2);
    EXPECT_EQ(t.live_messages, before.live_messages + 2);
    EXPECT_EQ(t.live_generations, before.live_generations + 1);
    EXPECT_EQ(value("arenarpc_grpc_stream_messages_total"), messages + 2);
    EXPECT_EQ(value("arenarpc_grpc_stream_live_messages"),
              before.live_messages + 2);
    EXPECT_EQ(value("arenarpc_grpc_stream_arenas"), before.streams + 1);
    EXPECT_GE(value("arenarpc_grpc_stream_generations_total"), 1u);
    EXPECT_GE(value("arenarpc_grpc_stream_live_generations"), 1u);
  }
  const StreamArenaTotals after = GetStreamArenaTotals();
  EXPECT_EQ(after.streams, before.streams);
  EXPECT_EQ(after.live_messages, before.live_messages);
  EXPECT_EQ(after.live_generations, before.live_generations);
  EXPECT_EQ(value("arenarpc_grpc_stream_arenas_total"),
            before.streams_created + 1);
}

// StreamArena's old names (Make, GetStats) still compile and do the same,
// for one release.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
TEST(StreamArenaTest, DeprecatedNamesStillWork) {
  StreamArena arena;
  {
    StreamMessage<EchoRequest> request = arena.Make<EchoRequest>();
    EXPECT_TRUE(request);
  }
  const StreamArenaStats s = arena.GetStats();
  EXPECT_EQ(s.messages, arena.Stats().messages);
  EXPECT_EQ(s.messages, 1u);
}
#pragma GCC diagnostic pop

TEST(StreamArenaTest, OverlappingMessagesRotateAtTheThreshold) {
  StreamArena arena(/*recycle_bytes=*/64 << 10);
  StreamMessage<EchoRequest> kept = arena.Create<EchoRequest>();  // never freed
  echo::BuildEchoRequest(10, 0, kept.get());
  std::vector<StreamMessage<EchoRequest>> window;
  for (int i = 0; i < 200; ++i) {
    window.push_back(arena.Create<EchoRequest>());
    echo::BuildEchoRequest(5, i, window.back().get());
    if (window.size() > 2) window.erase(window.begin());
  }
  const StreamArenaStats s = arena.Stats();
  EXPECT_GT(s.generations, 5u);
  EXPECT_LE(s.live_generations, 4u);  // bounded by what is alive
  EXPECT_EQ(s.live_messages, 3u);
  EXPECT_EQ(kept->payload_size(), 100);  // the old generation is still there
  std::string why;
  EchoRequest expected;
  echo::BuildEchoRequest(10, 0, &expected);
  EXPECT_EQ(kept->SerializeAsString(), expected.SerializeAsString());
}

TEST(StreamArenaDeathTest, DestroyedWithLiveMessagesAborts) {
  EXPECT_DEATH(
      {
        auto* arena = new StreamArena();
        auto* leaked =
            new StreamMessage<EchoRequest>(arena->Create<EchoRequest>());
        (void)leaked;
        delete arena;
      },
      "live messages");
}

}  // namespace
}  // namespace arenarpc
