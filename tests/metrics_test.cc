// The core's Prometheus text (arenarpc/metrics.h), linked without gRPC.
#include "arenarpc/metrics.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "arenarpc/arena.h"
#include "arenarpc/page_pool.h"
#include "test_messages.pb.h"

namespace arenarpc {
namespace {

// The value of the sample `series` (name plus labels), if present.
std::optional<uint64_t> Value(const std::string& text,
                              const std::string& series) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > series.size() && line.rfind(series + " ", 0) == 0) {
      return std::stoull(line.substr(series.size() + 1));
    }
  }
  return std::nullopt;
}

struct Node {
  uint64_t a = 0;
  uint64_t b = 0;
};

// Each test runs in its own process (gtest_discover_tests), so this one
// sees a process where nothing has used an arena yet.
TEST(MetricsTest, ReadingStatsFreezesNoOptions) {
  const std::string text = PrometheusText();
  EXPECT_EQ(Value(text, "arenarpc_page_pool_pages_in_use"), 0u);
  EXPECT_EQ(Value(text, "arenarpc_page_pool_page_size_bytes"),
            PagePoolOptions{}.page_size);
  EXPECT_EQ(Value(text, "arenarpc_arena_acquired_total"), 0u);
  EXPECT_EQ(GetArenaStats().arenas_created, 0u);
  // Before the fix GetArenaStats() froze the options: FailedPrecondition.
  ArenaOptions options;
  options.pages.page_size = PagePoolOptions{}.page_size * 2;
  EXPECT_TRUE(SetGlobalArenaOptions(options).ok());
  { ScopedArena arena; }
  EXPECT_EQ(Value(PrometheusText(), "arenarpc_page_pool_page_size_bytes"),
            options.pages.page_size);
}

TEST(MetricsTest, EveryCoreFamilyIsPresent) {
  static MessagePool<test::Leaf> leaves;
  RegisterMessagePoolStats("test.Leaf", &leaves);
  RegisterObjectPoolStats("test.Node", &ObjectPool<Node>::Default());
  const std::string text = PrometheusText();
  for (const char* family : {
           "arenarpc_page_pool_page_size_bytes",
           "arenarpc_page_pool_pages_in_use",
           "arenarpc_page_pool_pages_cached",
           "arenarpc_page_pool_pages_in_depot",
           "arenarpc_page_pool_bytes_held",
           "arenarpc_page_pool_os_pages_allocated_total",
           "arenarpc_page_pool_os_pages_released_total",
           "arenarpc_page_pool_cache_hits_total",
           "arenarpc_page_pool_cache_misses_total",
           "arenarpc_arena_acquired_total",
           "arenarpc_arena_created_total",
           "arenarpc_arena_idle",
           "arenarpc_arena_heap_blocks_total",
           "arenarpc_arena_heap_bytes_total",
           "arenarpc_arena_heap_fallback_blocks_total",
           "arenarpc_message_pool_acquisitions_total",
           "arenarpc_message_pool_reuse_hits_total",
           "arenarpc_message_pool_created_total",
           "arenarpc_message_pool_evicted_by_guard_total",
           "arenarpc_message_pool_rebuilt_garbage_total",
           "arenarpc_message_pool_rebuilt_aged_total",
           "arenarpc_message_pool_rebuilt_after_exception_total",
           "arenarpc_message_pool_fresh_arena_returns_total",
           "arenarpc_message_pool_large_on_arena_total",
           "arenarpc_message_pool_unrouted_large_total",
           "arenarpc_message_pool_dropped_idle_total",
           "arenarpc_message_pool_in_use",
           "arenarpc_message_pool_idle",
           "arenarpc_message_pool_bound_bytes",
           "arenarpc_message_pool_retained_bytes",
           "arenarpc_message_pool_kept_percent",
           "arenarpc_object_pool_object_stride_bytes",
           "arenarpc_object_pool_objects_in_use",
           "arenarpc_object_pool_objects_cached",
           "arenarpc_object_pool_objects_in_depot",
           "arenarpc_object_pool_blocks_held",
           "arenarpc_object_pool_bytes_held",
           "arenarpc_object_pool_blocks_released_total",
           "arenarpc_object_pool_objects_lost_total",
       }) {
    EXPECT_NE(text.find(std::string("# TYPE ") + family + " "),
              std::string::npos)
        << family;
  }
  EXPECT_EQ(text.find("arenarpc_grpc_"), std::string::npos);
  std::string appended = "# before\n";
  AppendPrometheusText(&appended);
  EXPECT_EQ(appended, "# before\n" + text);
}

TEST(MetricsTest, ValuesMoveWhenThePoolsAreUsed) {
  static MessagePool<test::Leaf> leaves;
  RegisterMessagePoolStats("test.UsedLeaf", &leaves);
  auto& nodes = ObjectPool<Node>::Default();
  RegisterObjectPoolStats("test.UsedNode", &nodes);
  const std::string before = PrometheusText();
  EXPECT_EQ(
      Value(before,
            "arenarpc_object_pool_objects_in_use{pool=\"test.UsedNode\"}"),
      0u);
  EXPECT_EQ(
      Value(before,
            "arenarpc_message_pool_acquisitions_total{pool=\"test.UsedLeaf\"}"),
      0u);

  Node* node = nodes.New();
  std::string text;
  {
    auto leaf = leaves.Acquire();
    ScopedArena arena;
    arena.Create<test::Leaf>()->set_text(std::string(100, 'x'));
    text = PrometheusText();
  }
  EXPECT_EQ(
      Value(text,
            "arenarpc_object_pool_objects_in_use{pool=\"test.UsedNode\"}"),
      1u);
  EXPECT_EQ(
      Value(text,
            "arenarpc_object_pool_object_stride_bytes{pool=\"test.UsedNode\"}"),
      sizeof(Node));
  EXPECT_GE(
      *Value(text, "arenarpc_object_pool_blocks_held{pool=\"test.UsedNode\"}"),
      1u);
  EXPECT_EQ(
      Value(text,
            "arenarpc_message_pool_acquisitions_total{pool=\"test.UsedLeaf\"}"),
      1u);
  EXPECT_EQ(Value(text, "arenarpc_message_pool_in_use{pool=\"test.UsedLeaf\"}"),
            1u);
  EXPECT_GE(*Value(text, "arenarpc_arena_acquired_total"), 1u);
  EXPECT_GE(*Value(text, "arenarpc_page_pool_pages_in_use"), 1u);
  EXPECT_GE(*Value(text, "arenarpc_page_pool_os_pages_allocated_total"), 1u);
  nodes.Delete(node);
  const std::string after = PrometheusText();
  EXPECT_EQ(
      Value(after,
            "arenarpc_object_pool_objects_in_use{pool=\"test.UsedNode\"}"),
      0u);
  EXPECT_EQ(
      Value(after, "arenarpc_message_pool_in_use{pool=\"test.UsedLeaf\"}"), 0u);
}

// A destroyed pool leaves the registry: nothing reads it afterwards (ASan
// would report a heap-use-after-free).
TEST(MetricsTest, DestroyedPoolsLeaveTheStats) {
  auto objects = std::make_unique<ObjectPool<Node>>();
  auto messages = std::make_unique<MessagePool<test::Leaf>>();
  RegisterObjectPoolStats("test.GoneObjects", objects.get());
  RegisterMessagePoolStats("test.GoneMessages", messages.get());
  objects->Delete(objects->New());
  { auto leaf = messages->Acquire(); }
  EXPECT_NE(PrometheusText().find("test.GoneObjects"), std::string::npos);
  EXPECT_NE(PrometheusText().find("test.GoneMessages"), std::string::npos);
  objects.reset();
  messages.reset();
  const std::string text = PrometheusText();
  EXPECT_EQ(text.find("test.GoneObjects"), std::string::npos);
  EXPECT_EQ(text.find("test.GoneMessages"), std::string::npos);
  for (const NamedObjectPoolStats& p : GetObjectPoolStats()) {
    EXPECT_NE(p.name, "test.GoneObjects");
  }
}

// The core's metrics need no gRPC: this binary links arenarpc::arenarpc
// only, and no gRPC symbol is loaded.
TEST(MetricsTest, NoGrpcInTheProcess) {
  EXPECT_EQ(dlsym(RTLD_DEFAULT, "grpc_init"), nullptr);
  EXPECT_EQ(dlsym(RTLD_DEFAULT, "_ZN4grpc13ServerBuilderC1Ev"), nullptr);
}

}  // namespace
}  // namespace arenarpc
