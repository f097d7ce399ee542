// Every corpus request round-trips byte for byte in every mode: parsed on
// the heap (the reference), on a pooled arena, in a reused pooled message
// (parsed by protobuf's own call, as gRPC does, and by ParseFrom), and in
// kAuto's measuring probe. Reused instances are used many times over a mix
// of sizes, so what an earlier request left behind would show.
#include <google/protobuf/message.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "arenarpc/arena.h"
#include "arenarpc/cost_probe.h"
#include "arenarpc/message_pool.h"
#include "corpus.h"

namespace arenarpc::corpus {
namespace {

using google::protobuf::Message;
using google::protobuf::util::MessageDifferencer;

std::string Deterministic(const Message& m) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  const bool ok = m.SerializeToCodedStream(&coded);
  return ok ? out : "<not serializable>";
}

class CorpusModesTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CorpusModesTest, EveryModeRoundTripsLikeAFreshHeapParse) {
  const Service* s = FindService(GetParam());
  ASSERT_NE(s, nullptr);
  const Message* prototype =
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(
          s->request);
  // The default pool (a fresh arena per use where Clear() cannot keep the
  // type), and one that reuses every type and rebuilds often: every path.
  // Both reuse from the first use (v24+ pools start on fresh arenas, which
  // message_pool_test covers).
  MessagePoolOptions defaults;
  defaults.fresh_returns_at_start = 0;
  MessagePoolOptions small_guard = defaults;
  small_guard.rebuild_every = 5;
  small_guard.min_bound_bytes = 1024;
  small_guard.reuse_lossy_types = true;
  MessagePool<Message> pool(prototype, defaults);
  MessagePool<Message> guarded(prototype, small_guard);
  // Reverse order too: a small request after a large one in the same instance.
  std::vector<std::string> requests = s->generate(/*seed=*/3, /*count=*/12);
  requests.insert(requests.end(), requests.rbegin(), requests.rend());
  for (size_t i = 0; i < requests.size(); ++i) {
    const std::string& wire = requests[i];
    std::unique_ptr<Message> heap(prototype->New());
    ASSERT_TRUE(heap->ParseFromString(wire)) << i;
    const std::string expected = Deterministic(*heap);

    ScopedArena arena;
    Message* on_arena = prototype->New(arena.arena());
    ASSERT_TRUE(on_arena->ParseFromString(wire));
    EXPECT_EQ(Deterministic(*on_arena), expected) << "arena " << i;
    EXPECT_TRUE(MessageDifferencer::Equals(*on_arena, *heap)) << i;

    for (MessagePool<Message>* p : {&pool, &guarded}) {
      auto by_caller = p->Acquire();
      ASSERT_TRUE(by_caller->ParseFromString(wire));
      EXPECT_EQ(Deterministic(*by_caller), expected)
          << "reuse (caller parses) " << i;
      EXPECT_TRUE(MessageDifferencer::Equals(*by_caller, *heap)) << i;
      by_caller.reset();
      auto by_pool = p->Acquire();
      ASSERT_TRUE(by_pool.ParseFrom(wire));
      EXPECT_EQ(Deterministic(*by_pool), expected) << "reuse (ParseFrom) " << i;
      EXPECT_TRUE(MessageDifferencer::Equals(*by_pool, *heap)) << i;
      EXPECT_EQ(s->walk(*by_pool), s->walk(*heap)) << i;
    }
  }
  EXPECT_EQ(pool.Stats().in_use, 0u);
  if (pool.ReuseLimit().empty()) {
    EXPECT_GT(pool.Stats().reuse_hits, 0u);
    EXPECT_EQ(pool.Stats().fresh_arena_returns, 0u);
  } else {
    EXPECT_EQ(pool.Stats().reuse_hits, 0u);
    EXPECT_EQ(pool.Stats().fresh_arena_returns, 2 * requests.size());
  }
  EXPECT_GT(guarded.Stats().reuse_hits, 0u);
  EXPECT_GT(guarded.Stats().rebuilt_aged + guarded.Stats().evicted_by_guard +
                guarded.Stats().rebuilt_garbage,
            0u);
}

TEST_P(CorpusModesTest, ProbeMeasuresTheService) {
  const Service* s = FindService(GetParam());
  const Message* prototype =
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(
          s->request);
  CostProbe probe(prototype);
  const ModeCosts c = probe.Measure(s->generate(/*seed=*/4, /*count=*/1)[0]);
  ASSERT_TRUE(c.ok);
  for (double ns : c.ns) EXPECT_GT(ns, 0);
}

std::vector<std::string> Names() {
  std::vector<std::string> names;
  for (const Service& s : Services()) names.push_back(s.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Corpus, CorpusModesTest, ::testing::ValuesIn(Names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace arenarpc::corpus
