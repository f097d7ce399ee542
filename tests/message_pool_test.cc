#include "arenarpc/message_pool.h"

#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "arenarpc/arena.h"
#include "arenarpc/internal/protobuf_compat.h"
#include "test_proto2.pb.h"
#include "test_util.h"

namespace arenarpc {
namespace {

using google::protobuf::util::MessageDifferencer;
using test::Body;
using test::Envelope;
using test::Node;

void FillBody(std::mt19937& rng, int leaves, Body* body) {
  for (int i = 0; i < leaves; ++i) test::FillLeaf(rng, body->add_leaves());
  for (int i = 0, n = rng() % 4; i < n; ++i)
    body->add_names(test::RandomString(rng, 30));
  switch (rng() % 3) {
    case 0:
      test::FillLeaf(rng, body->mutable_head());
      break;
    case 1:
      body->mutable_head();
      break;  // present but empty
    default:
      break;
  }
}

Envelope RandomEnvelope(std::mt19937& rng) {
  Envelope e;
  if (rng() % 2) e.set_id(test::RandomString(rng, 20));
  switch (rng() % 4) {
    case 0:
      FillBody(rng, rng() % 40, e.mutable_body());
      break;
    case 1:
      e.mutable_body();
      break;  // explicit empty body
    default:
      break;  // no body
  }
  if (rng() % 3 == 0) FillBody(rng, rng() % 5, e.mutable_extra());
  for (int i = 0, n = rng() % 3; i < n; ++i)
    FillBody(rng, rng() % 5, e.add_items());
  switch (rng() % 3) {
    case 0:
      FillBody(rng, rng() % 3, e.mutable_alt());
      break;
    case 1:
      e.set_note(test::RandomString(rng, 10));
      break;
    default:
      break;
  }
  return e;
}

// These tests are about reuse itself, on types Clear() cannot keep whole
// (Envelope, Node): reuse them anyway (the default gives them fresh arenas,
// TypeClearCannotKeepGetsAFreshArenaEachUse).
MessagePoolOptions Reusing() {
  MessagePoolOptions o;
  o.reuse_lossy_types = true;
  return o;
}

TEST(MessagePoolTest, AcquiredMessageIsEmpty) {
  MessagePool<Node> pool(Reusing());
  std::mt19937 rng(1);
  for (int i = 0; i < 20; ++i) {
    {
      PooledMessage<Node> m = pool.Acquire();
      ASSERT_TRUE(m);
      EXPECT_EQ(m->ByteSizeLong(), 0u) << "iteration " << i;
      EXPECT_FALSE(m->has_main());
      EXPECT_FALSE(m->has_extra());
      EXPECT_EQ(m->choice_case(), Node::CHOICE_NOT_SET);
      EXPECT_TRUE(m->by_name().empty());
      EXPECT_TRUE(m->GetReflection()->GetUnknownFields(*m).empty());
      Node filled;
      test::FillNode(rng, 3, &filled);
      std::string wire = test::Deterministic(filled);
      wire += std::string("\xa8\x1f\x07", 3);  // unknown field 501, varint 7
      ASSERT_TRUE(m.ParseFrom(wire));
      EXPECT_FALSE(m->GetReflection()->GetUnknownFields(*m).empty());
    }
  }
  // One instance, reused (rebuilt when its arena garbage grows: 33.6 builds
  // new string objects on each parse, docs/PROTOBUF_VERSIONS.md).
  const MessagePoolStats s = pool.Stats();
  EXPECT_EQ(s.reuse_hits + s.rebuilt_garbage, 19u);
}

// Heap instances (v24+) from the first use: these tests are about reuse,
// not the pool's start on fresh arenas.
MessagePoolOptions ReusedFromTheStart() {
  MessagePoolOptions o;
  o.fresh_returns_at_start = 0;
  return o;
}

TEST(MessagePoolTest, ExtensionsAreCleared) {
  MessagePool<test::Extendable> pool(ReusedFromTheStart());
  {
    auto m = pool.Acquire();
    m->set_name("x");
    m->SetExtension(test::ext_text, "extension text");
    m->AddExtension(test::ext_numbers, 5);
  }
  auto m = pool.Acquire();
  EXPECT_EQ(pool.Stats().reuse_hits, 1u);
  EXPECT_FALSE(m->HasExtension(test::ext_text));
  EXPECT_EQ(m->ExtensionSize(test::ext_numbers), 0);
  EXPECT_EQ(m->ByteSizeLong(), 0u);
}

// Property: parsing into a reused instance gives exactly what a fresh parse
// gives, presence included, whatever the previous contents were.
TEST(MessagePoolTest, ReusedParseEqualsFreshParse) {
  MessagePool<Envelope> envelopes(Reusing());
  MessagePool<Node> nodes(Reusing());
  std::mt19937 rng(2024);
  for (int i = 0; i < 400; ++i) {
    const Envelope source = RandomEnvelope(rng);
    const std::string wire = test::Deterministic(source);
    Envelope fresh;
    ASSERT_TRUE(fresh.ParseFromString(wire));
    auto reused = envelopes.Acquire();
    ASSERT_TRUE(reused.ParseFrom(wire));
    ASSERT_EQ(test::Deterministic(*reused), test::Deterministic(fresh)) << i;
    ASSERT_TRUE(MessageDifferencer::Equals(*reused, fresh)) << i;
    ASSERT_EQ(reused->has_body(), fresh.has_body()) << i;
    ASSERT_EQ(reused->body().has_head(), fresh.body().has_head()) << i;

    Node node;
    test::FillNode(rng, 2, &node);
    const std::string node_wire = test::Deterministic(node);
    auto n = nodes.Acquire();
    ASSERT_TRUE(n.ParseFrom(node_wire));
    ASSERT_EQ(test::Deterministic(*n), node_wire) << i;
    ASSERT_EQ(n->has_main(), node.has_main()) << i;
  }
  EXPECT_GT(envelopes.Stats().reuse_hits, 390u);
}

void FillBatch(std::mt19937& rng, int series, test::Batch* batch) {
  for (int i = 0; i < series; ++i) {
    test::Series* s = batch->add_series();
    for (int l = 0; l < 6; ++l) {
      test::Label* label = s->add_labels();
      label->set_name(test::RandomString(rng, 20));
      label->set_value(test::RandomString(rng, 40));
    }
    for (int k = 0; k < 4; ++k) {
      s->add_samples()->set_value(static_cast<double>(rng()));
    }
  }
}

// Parses big, then small and big alternately, into `pool`'s one instance:
// the same element objects every time.
void ExpectSameObjects(MessagePool<test::Batch>& pool,
                       const std::string& big_wire,
                       const std::string& small_wire) {
  const test::Series* first = nullptr;
  {
    auto m = pool.Acquire();
    ASSERT_TRUE(m.ParseFrom(big_wire));
    first = &m->series(0);
  }
  for (int i = 0; i < 20; ++i) {
    auto m = pool.Acquire();
    ASSERT_TRUE(m.ParseFrom(i % 2 ? big_wire : small_wire));
    EXPECT_EQ(&m->series(0), first);  // the same element objects
    EXPECT_EQ(m->SerializeAsString(), i % 2 ? big_wire : small_wire);
  }
  const MessagePoolStats s = pool.Stats();
  EXPECT_EQ(s.created, 1u);
  EXPECT_EQ(s.rebuilt_garbage, 0u);
}

TEST(MessagePoolTest, KeepsTheCapacityOfRepeatedFields) {
  MessagePoolOptions o = ReusedFromTheStart();
  o.max_garbage_ratio = 100;  // never rebuilt: the same objects throughout
  std::mt19937 rng(3);
  test::Batch big, small;
  FillBatch(rng, 200, &big);
  FillBatch(rng, 150, &small);
  const std::string big_wire = big.SerializeAsString();
  const std::string small_wire = small.SerializeAsString();

  MessagePool<test::Batch> pool(o);
  ExpectSameObjects(pool, big_wire, small_wire);
  // Nothing allocated again: on 3.21 the instance is on an arena; on v24+ on
  // the heap, where parsing keeps the strings (internal/protobuf_compat.h).
  EXPECT_GE(pool.Stats().kept_percent, 95u);
  EXPECT_EQ(pool.Acquire()->GetArena() == nullptr,
            internal::kArenaParseRecreatesStrings);

  // Forced onto an arena, v24+ re-creates every singular string (a new
  // std::string on the arena per parse); the series, labels and samples stay.
  o.arena_instances = true;
  MessagePool<test::Batch> on_arena(o);
  ExpectSameObjects(on_arena, big_wire, small_wire);
  EXPECT_NE(on_arena.Acquire()->GetArena(), nullptr);
  if (internal::kArenaParseRecreatesStrings) {
    EXPECT_GE(on_arena.Stats().kept_percent, 60u);
    EXPECT_LT(on_arena.Stats().kept_percent, 95u);
  } else {
    EXPECT_GE(on_arena.Stats().kept_percent, 95u);
  }
}

TEST(MessagePoolTest, HeapInstanceKeepsStringBuffers) {
  // A singular string parsed again into a reused instance keeps its buffer
  // where the pool chose the heap (v24+); with instances on arenas 3.21 does.
  MessagePool<test::Batch> pool(ReusedFromTheStart());
  std::mt19937 rng(5);
  test::Batch b;
  FillBatch(rng, 3, &b);
  b.mutable_series(0)->mutable_labels(0)->set_value(std::string(200, 'x'));
  const std::string wire = b.SerializeAsString();
  const char* data = nullptr;
  for (int i = 0; i < 5; ++i) {
    auto m = pool.Acquire();
    ASSERT_TRUE(m.ParseFrom(wire));
    const std::string& value = m->series(0).labels(0).value();
    if (data == nullptr) data = value.data();
    EXPECT_EQ(value.data(), data) << "use " << i;
  }
}

TEST(MessagePoolTest, AbandonedSubtreesAreBoundedAndRebuilt) {
  // The Body sits in a oneof: Clear() destroys it, on every version.
  MessagePoolOptions o = Reusing();
  o.rebuild_every = 0;
  MessagePool<Envelope> pool(o);
  std::mt19937 rng(3);
  Envelope e;
  FillBody(rng, 300, e.mutable_alt());
  const std::string wire = e.SerializeAsString();
  for (int i = 0; i < 50; ++i) {
    auto m = pool.Acquire();
    ASSERT_TRUE(m.ParseFrom(wire));
    ASSERT_EQ(m->SerializeAsString(), wire);
  }
  const MessagePoolStats s = pool.Stats();
  // Each use abandons the body on the arena; at twice the footprint the
  // instance is rebuilt, so it never holds more than that.
  EXPECT_GE(s.rebuilt_garbage, 10u);
  EXPECT_LE(s.kept_percent, 30u);
  EXPECT_EQ(s.idle, 1u);
  ScopedArena fresh;
  Envelope* one = fresh.Create<Envelope>();
  ASSERT_TRUE(one->ParseFromString(wire));
  EXPECT_LE(s.retained_bytes, 2 * fresh.SpaceAllocated() + (64 << 10));
}

TEST(MessagePoolTest, TypeClearCannotKeepGetsAFreshArenaEachUse) {
  // Envelope: Clear() drops `body` (ReuseLimit): by default no Clear(), no
  // walk, the arena is reset on return, and nothing stays held.
  MessagePool<Envelope> lossy;
  MessagePool<test::Batch> whole(ReusedFromTheStart());
  std::mt19937 rng(8);
  for (int i = 0; i < 40; ++i) {
    const Envelope e = RandomEnvelope(rng);
    const std::string wire = e.SerializeAsString();
    auto m = lossy.Acquire();
    EXPECT_EQ(m->ByteSizeLong(), 0u);  // empty, whatever came before
    ASSERT_TRUE(m->ParseFromString(wire));
    EXPECT_TRUE(MessageDifferencer::Equals(*m, e));
    test::Batch b;
    FillBatch(rng, 5, &b);
    auto n = whole.Acquire();
    ASSERT_TRUE(n.ParseFrom(b.SerializeAsString()));
  }
  const MessagePoolStats s = lossy.Stats();
  EXPECT_EQ(s.fresh_arena_returns, 40u);
  EXPECT_EQ(s.created, 40u);
  EXPECT_EQ(s.reuse_hits, 0u);
  EXPECT_EQ(s.retained_bytes, 0u);
  EXPECT_EQ(s.idle, 1u);
  const MessagePoolStats w = whole.Stats();
  EXPECT_EQ(w.fresh_arena_returns, 0u);
  EXPECT_EQ(w.created, 1u);
}

TEST(MessagePoolTest, TwoPoolsAlternatingOnOneThreadEachSeeTheirTraffic) {
  // Sizes taken by a ByteSizeLong() walk on sampled returns (no hint): a
  // shared per-thread tick would sample only one of two alternating pools.
  MessagePoolOptions o = Reusing();
  o.hard_cap_bytes = 8 << 20;
  o.min_bound_bytes = 1024;
  o.sample_every = 4;
  MessagePool<test::Batch> a(o);
  MessagePool<test::Batch> b(o);
  std::mt19937 rng(12);
  test::Batch small, big;
  FillBatch(rng, 2, &small);
  FillBatch(rng, 200, &big);
  const std::string small_wire = small.SerializeAsString();
  const std::string big_wire = big.SerializeAsString();
  for (int i = 0; i < 4000; ++i) {
    auto m = a.Acquire();
    ASSERT_TRUE(m->ParseFromString(small_wire));  // the caller parses
    auto n = b.Acquire();
    ASSERT_TRUE(n->ParseFromString(big_wire));
  }
  const MessagePoolStats sa = a.Stats(), sb = b.Stats();
  EXPECT_LE(sa.bound_bytes, 4 * small_wire.size() + 1024);
  EXPECT_LT(sb.bound_bytes, o.hard_cap_bytes);
  EXPECT_GE(sb.bound_bytes, big_wire.size());
  // A big message in pool a is now caught by a's own bound.
  for (int i = 0; i < 64 && a.Stats().evicted_by_guard == 0; ++i) {
    auto m = a.Acquire();
    ASSERT_TRUE(m->ParseFromString(big_wire));
  }
  EXPECT_GE(a.Stats().evicted_by_guard, 1u);
}

TEST(MessagePoolTest, MalformedInputFailsAndLosesNothing) {
  MessagePool<Envelope> pool(Reusing());
  std::mt19937 rng(4);
  Envelope good;
  FillBody(rng, 50, good.mutable_body());
  const std::string wire = good.SerializeAsString();
  {
    auto m = pool.Acquire();
    ASSERT_TRUE(m.ParseFrom(wire));
  }
  {
    auto m = pool.Acquire();
    EXPECT_FALSE(m.ParseFrom(wire.substr(0, wire.size() / 2)));  // truncated
    EXPECT_EQ(m->ByteSizeLong(), 0u);
    EXPECT_FALSE(m.ParseFrom(std::string("\xff\xff\xff\xff\xff\xff", 6)));
    EXPECT_EQ(m->ByteSizeLong(), 0u);
  }
  auto m = pool.Acquire();
  ASSERT_TRUE(m.ParseFrom(wire));
  EXPECT_EQ(m->SerializeAsString(), wire);
}

TEST(MessagePoolTest, GuardEvictsAnInstanceThatGrewPastTheHardCap) {
  MessagePoolOptions o = Reusing();
  o.hard_cap_bytes = 20000;
  o.min_bound_bytes = 1000;
  MessagePool<Envelope> pool(o);
  std::mt19937 rng(5);
  Envelope big;
  FillBody(rng, 1000, big.mutable_body());
  ASSERT_GT(big.ByteSizeLong(), o.hard_cap_bytes);
  {
    auto m = pool.Acquire();
    ASSERT_TRUE(m.ParseFrom(big.SerializeAsString()));
  }
  MessagePoolStats s = pool.Stats();
  EXPECT_EQ(s.evicted_by_guard, 1u);
  EXPECT_EQ(s.idle, 1u);            // an empty shell, rebuilt when used
  EXPECT_EQ(s.retained_bytes, 0u);  // its arena went back
  // Built by hand, sized by the caller's serialization (cached size).
  {
    auto m = pool.Acquire();
    m->CopyFrom(big);
    EXPECT_FALSE(m->SerializeAsString().empty());
  }
  EXPECT_EQ(pool.Stats().evicted_by_guard, 2u);
  // Small ones are kept.
  {
    auto m = pool.Acquire();
    m->set_id("small");
  }
  s = pool.Stats();
  EXPECT_EQ(s.evicted_by_guard, 2u);
  EXPECT_EQ(s.idle, 1u);
  EXPECT_EQ(s.created, 3u);
}

TEST(MessagePoolTest, BoundAdaptsToRecentSizes) {
  MessagePoolOptions o = Reusing();
  o.hard_cap_bytes = 10 << 20;
  o.min_bound_bytes = 1024;
  MessagePool<Envelope> pool(o);
  std::mt19937 rng(6);
  Envelope small;
  FillBody(rng, 10, small.mutable_body());  // a few hundred bytes
  const std::string small_wire = small.SerializeAsString();
  for (int i = 0; i < 1024; ++i) {
    auto m = pool.Acquire();
    ASSERT_TRUE(m.ParseFrom(small_wire));
  }
  const MessagePoolStats s = pool.Stats();
  EXPECT_LE(s.bound_bytes, 4 * small_wire.size() + 1024);
  EXPECT_EQ(s.evicted_by_guard, 0u);
  Envelope big;
  FillBody(rng, 500, big.mutable_body());  // far above the bound, below the cap
  {
    auto m = pool.Acquire();
    ASSERT_TRUE(m.ParseFrom(big.SerializeAsString()));
  }
  EXPECT_EQ(pool.Stats().evicted_by_guard, 1u);
}

TEST(MessagePoolTest, BurstOfHugeMessagesLeavesNothingAboveTheBound) {
  MessagePoolOptions o = Reusing();
  o.min_bound_bytes = 1024;
  MessagePool<test::Batch> pool(o);
  std::mt19937 rng(9);
  test::Batch small, huge;
  FillBatch(rng, 20, &small);
  FillBatch(rng, 4000, &huge);  // ~100x
  const std::string small_wire = small.SerializeAsString();
  const std::string huge_wire = huge.SerializeAsString();
  for (int i = 0; i < 2000; ++i) {  // learn the traffic
    auto m = pool.Acquire();
    ASSERT_TRUE(m.ParseFrom(small_wire));
  }
  uint64_t small_retained = pool.Stats().retained_bytes;
  {
    std::vector<PooledMessage<test::Batch>> burst;
    for (int i = 0; i < 8; ++i) {
      burst.push_back(pool.Acquire());
      ASSERT_TRUE(burst.back()->ParseFromString(huge_wire));  // no hint
      burst.back().set_size_hint(huge_wire.size());
    }
  }
  const MessagePoolStats s = pool.Stats();
  EXPECT_EQ(s.evicted_by_guard, 8u);
  EXPECT_LE(s.bound_bytes, 4 * small_wire.size() + 1024);
  // Nothing of the burst is kept: retained memory is what small traffic
  // needs (at most the 8 instances the burst made, each small).
  EXPECT_LE(s.retained_bytes, 8 * (small_retained + (64 << 10)));
  for (int i = 0; i < 100; ++i) {
    auto m = pool.Acquire();
    ASSERT_TRUE(m.ParseFrom(small_wire));
    EXPECT_LT(m->series().Capacity(), 4000);
  }
}

// A pool's options with a 4 KB growth bound from the start, and a Batch
// below it and one above it, serialized.
struct SkewedInputs {
  MessagePoolOptions options;
  std::string small_wire, big_wire;
};
SkewedInputs MakeSkewedInputs(uint32_t seed) {
  SkewedInputs in;
  in.options.hard_cap_bytes = 4096;  // the bound before any size is learned
  in.options.min_bound_bytes = 0;
  // Heap instances from the first use (the start on fresh arenas has its
  // own test, YoungPoolSeesAnUnroutedLargeInputOnAFreshArena).
  in.options.fresh_returns_at_start = 0;
  std::mt19937 rng(seed);
  test::Batch small, big;
  FillBatch(rng, 2, &small);
  FillBatch(rng, 100, &big);
  in.small_wire = small.SerializeAsString();
  in.big_wire = big.SerializeAsString();
  EXPECT_LT(in.small_wire.size(), in.options.hard_cap_bytes);
  EXPECT_GT(in.big_wire.size(), in.options.hard_cap_bytes);
  return in;
}

TEST(MessagePoolTest, LargeInputGoesToAFreshArenaNotTheHeapInstance) {
  // Heap instances (v24+): ParseFrom() of an input above the bound parses
  // it on a fresh arena; the heap instance is neither grown nor evicted.
  // Arena instances (3.21) take it on their arena and are evicted.
  auto [o, small_wire, big_wire] = MakeSkewedInputs(12);
  const bool heap = internal::kArenaParseRecreatesStrings;

  MessagePool<test::Batch> pool(o);
  ASSERT_TRUE(pool.ReuseLimit().empty());
  const test::Batch* instance = nullptr;
  {
    auto m = pool.Acquire();
    ASSERT_TRUE(m.ParseFrom(small_wire));
    instance = m.get();
  }
  {
    auto m = pool.Acquire();
    ASSERT_EQ(m.get(), instance);  // the one idle instance
    ASSERT_TRUE(m.ParseFrom(big_wire));
    EXPECT_EQ(m->SerializeAsString(), big_wire);
    EXPECT_EQ(m.get() != instance, heap);
    if (heap) {
      EXPECT_NE(m->GetArena(), nullptr);
    }
  }
  MessagePoolStats s = pool.Stats();
  EXPECT_EQ(s.large_on_arena, heap ? 1u : 0u);
  EXPECT_EQ(s.evicted_by_guard, heap ? 0u : 1u);
  {
    auto m = pool.Acquire();
    ASSERT_TRUE(m.ParseFrom(small_wire));
    EXPECT_EQ(m->SerializeAsString(), small_wire);
    if (heap) {
      EXPECT_EQ(m.get(), instance);  // kept, not rebuilt
      EXPECT_EQ(m->GetArena(), nullptr);
      EXPECT_LT(m->series().Capacity(), 100);  // not grown by the big input
    }
  }
  s = pool.Stats();
  EXPECT_EQ(s.created, heap ? 1u : 2u);
  EXPECT_EQ(s.idle, 1u);

  // Off: the input goes into the heap instance, which the guard evicts.
  o.large_inputs_on_arena = false;
  MessagePool<test::Batch> inplace(o);
  {
    auto m = inplace.Acquire();
    const test::Batch* before = m.get();
    ASSERT_TRUE(m.ParseFrom(big_wire));
    EXPECT_EQ(m.get(), before);
  }
  EXPECT_EQ(inplace.Stats().large_on_arena, 0u);
  EXPECT_EQ(inplace.Stats().evicted_by_guard, 1u);
}

void ExpectUnroutedLargeTurnsHeapInstancesOff(MessagePoolOptions o,
                                              const std::string& small_wire,
                                              const std::string& big_wire,
                                              bool heap) {
  MessagePool<test::Batch> pool(o);
  {
    auto m = pool.Acquire();
    ASSERT_TRUE(m->ParseFromString(small_wire));  // below the bound: kept
  }
  EXPECT_EQ(pool.Stats().unrouted_large, 0u);
  EXPECT_FALSE(pool.Stats().fresh_arenas_now);
  {
    auto m = pool.Acquire();
    EXPECT_EQ(m->GetArena() == nullptr, heap);
    ASSERT_TRUE(m->ParseFromString(big_wire));
  }
  MessagePoolStats s = pool.Stats();
  EXPECT_EQ(s.evicted_by_guard, 1u);
  EXPECT_EQ(s.unrouted_large, heap ? 1u : 0u);
  EXPECT_EQ(s.fresh_arenas_now, heap);
  if (!heap) return;
  // Fresh arenas now, whichever way the caller parses.
  {
    auto m = pool.Acquire();
    EXPECT_NE(m->GetArena(), nullptr);
    ASSERT_TRUE(m->ParseFromString(big_wire));
    EXPECT_EQ(m->SerializeAsString(), big_wire);
  }
  {
    auto m = pool.Acquire();
    EXPECT_NE(m->GetArena(), nullptr);
    ASSERT_TRUE(m.ParseFrom(small_wire));
    EXPECT_EQ(m->SerializeAsString(), small_wire);
  }
  // A fresh arena's return is measured while the pool is young (its guard
  // has fewer than 1024 sizes): the second large input is seen too.
  EXPECT_EQ(pool.Stats().unrouted_large, 2u);
  // Heap instances again once unrouted_fresh_returns returns went by (the
  // pool counts 1 return in 64 at random, by 64).
  for (int i = 0; i < 20000 && pool.Stats().fresh_arenas_now; ++i) {
    auto m = pool.Acquire();
    ASSERT_TRUE(m->ParseFromString(small_wire));
  }
  EXPECT_FALSE(pool.Stats().fresh_arenas_now);
  {
    auto m = pool.Acquire();
    EXPECT_EQ(m->GetArena(), nullptr);
    ASSERT_TRUE(m->ParseFromString(small_wire));
  }

  // ParseFrom() routes large inputs: nothing is turned off.
  MessagePool<test::Batch> routed(o);
  for (int i = 0; i < 3; ++i) {
    auto m = routed.Acquire();
    ASSERT_TRUE(m.ParseFrom(i == 1 ? big_wire : small_wire));
  }
  EXPECT_EQ(routed.Stats().large_on_arena, 1u);
  EXPECT_EQ(routed.Stats().unrouted_large, 0u);
  EXPECT_FALSE(routed.Stats().fresh_arenas_now);
  // unrouted_fresh_returns = 0: evicted, never turned off.
  o.unrouted_fresh_returns = 0;
  MessagePool<test::Batch> never(o);
  {
    auto m = never.Acquire();
    ASSERT_TRUE(m->ParseFromString(big_wire));
  }
  EXPECT_EQ(never.Stats().evicted_by_guard, 1u);
  EXPECT_FALSE(never.Stats().fresh_arenas_now);
}

TEST(MessagePoolTest, UnroutedLargeInputTurnsHeapInstancesOffForAWhile) {
  // Heap instances (v24+): an input above the bound parsed into the
  // instance with protobuf's own ParseFromString (the pool could not route
  // it) is seen on return; the pool then serves fresh arenas, and heap
  // instances again after unrouted_fresh_returns returns. Arena instances
  // (3.21) are evicted as before and nothing is turned off.
  auto [o, small_wire, big_wire] = MakeSkewedInputs(13);
  o.sample_every = 1;  // every return without a size is measured
  o.unrouted_fresh_returns = 1;
  for (const bool forced : {false, true}) {
    internal::SetHeapInstancesForTest(forced);
    ExpectUnroutedLargeTurnsHeapInstancesOff(
        o, small_wire, big_wire,
        forced || internal::kArenaParseRecreatesStrings);
    internal::SetHeapInstancesForTest(false);
  }
}

TEST(MessagePoolTest, HeapInstancesLearnTheirFirstBoundFromUnroutedUses) {
  // Uses that do not go through ParseFrom() give no size: a heap-instance
  // pool measures each until its guard has a bound (64 sizes), so that an
  // input above it is seen from then on. Arena-instance pools sample.
  auto [o, small_wire, big_wire] = MakeSkewedInputs(14);
  o.hard_cap_bytes = size_t{8} << 20;  // the default: the bound until learned
  for (const bool heap : {false, true}) {
    internal::SetHeapInstancesForTest(heap);
    MessagePool<test::Batch> pool(o);
    internal::SetHeapInstancesForTest(false);
    for (int i = 0; i < 64; ++i) {
      auto m = pool.Acquire();
      ASSERT_TRUE(m->ParseFromString(small_wire));
    }
    EXPECT_EQ(pool.Stats().bound_bytes < o.hard_cap_bytes,
              heap || internal::kArenaParseRecreatesStrings)
        << "heap instances " << heap;
  }
}

TEST(MessagePoolTest, YoungPoolSeesAnUnroutedLargeInputOnAFreshArena) {
  // Heap instances (v24+; forced here, so 3.21 runs it too): a pool serves
  // fresh arenas for about its first fresh_returns_at_start returns, each
  // measured, so an input above the bound parsed with protobuf's own
  // ParseFromString turns heap instances off before any heap instance took
  // one (mutation check: not measuring those returns, or heap instances
  // from the first use, fails here).
  auto [o, small_wire, big_wire] = MakeSkewedInputs(15);
  o.fresh_returns_at_start = 1;  // over at the first count-down
  internal::SetHeapInstancesForTest(true);
  MessagePool<test::Batch> pool(o), control(o);
  internal::SetHeapInstancesForTest(false);
  EXPECT_TRUE(pool.Stats().fresh_arenas_now);
  {
    auto m = pool.Acquire();
    EXPECT_NE(m->GetArena(), nullptr);  // a fresh arena, not the heap
    ASSERT_TRUE(m->ParseFromString(big_wire));
  }
  MessagePoolStats s = pool.Stats();
  EXPECT_EQ(s.unrouted_large, 1u);
  EXPECT_EQ(s.evicted_by_guard, 0u);  // no instance held it
  EXPECT_TRUE(s.fresh_arenas_now);
  // Off for unrouted_fresh_returns (65536) returns now: the count-down
  // takes at most 64 a return.
  for (int i = 0; i < 1000; ++i) {
    auto m = pool.Acquire();
    ASSERT_NE(m->GetArena(), nullptr) << "use " << i;
    ASSERT_TRUE(m->ParseFromString(small_wire));
  }
  EXPECT_EQ(pool.Stats().unrouted_large, 1u);

  // A routed large input and small ones: heap instances after the start.
  {
    auto m = control.Acquire();
    ASSERT_TRUE(m.ParseFrom(big_wire));
  }
  for (int i = 0; i < 20000 && control.Stats().fresh_arenas_now; ++i) {
    auto m = control.Acquire();
    ASSERT_TRUE(m->ParseFromString(small_wire));
  }
  EXPECT_FALSE(control.Stats().fresh_arenas_now);
  EXPECT_EQ(control.Stats().unrouted_large, 0u);
  auto m = control.Acquire();
  EXPECT_EQ(m->GetArena(), nullptr);
  ASSERT_TRUE(m->ParseFromString(small_wire));
}

TEST(MessagePoolTest, IdleInstancesAreBounded) {
  MessagePoolOptions o = Reusing();
  o.idle_per_thread = 2;
  o.idle_max = 3;
  MessagePool<Node> pool(o);
  {
    std::vector<PooledMessage<Node>> many;
    for (int i = 0; i < 20; ++i) many.push_back(pool.Acquire());
    EXPECT_EQ(pool.Stats().in_use, 20u);
  }
  const MessagePoolStats s = pool.Stats();
  EXPECT_EQ(s.in_use, 0u);
  EXPECT_LE(s.idle, 5u);
  EXPECT_GE(s.dropped_idle, 15u);
}

// A thread that used the pool and then idles (alive) keeps its cached
// instances until they are released as idle; an active thread's stay.
TEST(MessagePoolTest, ReleaseIdleCachesFreesIdleThreadsInstances) {
  MessagePool<Node> pool(Reusing());
  std::mutex mu;
  std::condition_variable cv;
  bool used = false, stop = false;
  std::thread idle([&] {
    { auto a = pool.Acquire(), b = pool.Acquire(); }
    std::unique_lock<std::mutex> lock(mu);
    used = true;
    cv.notify_all();
    cv.wait(lock, [&] { return stop; });
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return used; });
  }
  ASSERT_EQ(pool.Stats().idle, 2u);
  pool.Trim();  // the depot only
  EXPECT_EQ(pool.Stats().idle, 2u);
  EXPECT_EQ(pool.ReleaseIdleCaches(std::chrono::milliseconds(0)), 2u);
  const MessagePoolStats s = pool.Stats();
  EXPECT_EQ(s.idle, 0u);
  EXPECT_EQ(s.retained_bytes, 0u);
  // An hour's idleness, first seen now: nothing is released yet.
  { auto c = pool.Acquire(); }
  EXPECT_EQ(pool.ReleaseIdleCaches(std::chrono::hours(1)), 0u);
  EXPECT_EQ(pool.Stats().idle, 1u);
  {
    std::lock_guard<std::mutex> lock(mu);
    stop = true;
  }
  cv.notify_all();
  idle.join();
}

// What a burst built goes back while calls go on: instances no use reached
// for a decay period are destroyed (the first tick after the burst starts
// their period, the next destroys them); the ones in use stay. Off: kept.
TEST(MessagePoolTest, IdleInstancesABurstBuiltDecayWhileCallsGoOn) {
  for (const uint32_t decay_ms : {200u, 0u}) {
    SCOPED_TRACE(decay_ms);
    MessagePoolOptions o = Reusing();  // 4 per thread
    o.idle_decay_ms = decay_ms;
    MessagePool<Node> pool(o);
    {
      std::vector<PooledMessage<Node>> burst;
      for (int i = 0; i < 10; ++i) burst.push_back(pool.Acquire());
    }
    ASSERT_EQ(pool.Stats().idle, 10u);
    const auto calls = [&] {  // 16 returns: a decay check
      for (int i = 0; i < 16; ++i) pool.Acquire()->set_id(i);
    };
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    calls();
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    calls();
    const MessagePoolStats s = pool.Stats();
    if (decay_ms == 0) {
      EXPECT_EQ(s.idle, 10u);
      EXPECT_EQ(s.dropped_idle, 0u);
    } else {
      EXPECT_LE(s.idle, 4u);  // this thread's stack, in use
      EXPECT_GE(s.idle, 1u);
      EXPECT_EQ(s.dropped_idle, 10u - s.idle);
    }
  }
}

// rebuild_every = n: the n-th use is the instance's last (mutation check:
// off by one went unnoticed before).
TEST(MessagePoolTest, RebuiltAfterExactlyRebuildEveryUses) {
  MessagePoolOptions o = Reusing();
  o.rebuild_every = 3;
  MessagePool<Node> pool(o);
  for (int i = 0; i < 2; ++i) pool.Acquire()->set_name("use");
  EXPECT_EQ(pool.Stats().rebuilt_aged, 0u);
  pool.Acquire()->set_name("third use");
  EXPECT_EQ(pool.Stats().rebuilt_aged, 1u);
  EXPECT_EQ(pool.Stats().created, 1u);
  pool.Acquire()->set_name("a new instance");
  EXPECT_EQ(pool.Stats().created, 2u);
}

// new_instance(): the first use of an instance the pool built because it
// had none idle; not a later use, not a rebuild (aged here), not a pool of
// fresh arenas, not an empty handle.
TEST(MessagePoolTest, NewInstanceIsTheFirstUseOfABuiltInstance) {
  MessagePoolOptions o = Reusing();
  o.rebuild_every = 2;
  MessagePool<Node> pool(o);
  {
    auto a = pool.Acquire();
    auto b = pool.Acquire();  // none idle: a second instance
    EXPECT_TRUE(a.new_instance());
    EXPECT_TRUE(b.new_instance());
    a->set_name("a");
  }
  auto c = pool.Acquire();
  EXPECT_FALSE(c.new_instance());  // used before
  c->set_name("second use: aged, rebuilt on the next Acquire");
  c.reset();
  auto d = pool.Acquire();
  auto e = pool.Acquire();
  EXPECT_EQ(pool.Stats().created, 3u);  // two built, one rebuilt
  EXPECT_FALSE(d.new_instance());
  EXPECT_FALSE(e.new_instance());
  auto f = pool.Acquire();  // none idle: a third instance
  PooledMessage<Node> moved = std::move(f);
  EXPECT_TRUE(moved.new_instance());  // follows the handle
  EXPECT_FALSE(f.new_instance());     // empty
  EXPECT_FALSE(PooledMessage<Node>().new_instance());

  MessagePool<Envelope> lossy;  // fresh arenas: every use is one
  EXPECT_FALSE(lossy.Acquire().new_instance());
}

// A heap-instance pool (protobuf v24+) serves fresh arenas while young:
// those uses are not new instances; the first heap instance an entry
// builds after them is.
TEST(MessagePoolTest, FirstHeapInstanceAfterTheFreshStartIsNew) {
  internal::SetHeapInstancesForTest(true);
  MessagePoolOptions o;
  o.fresh_returns_at_start = 64;
  MessagePool<test::Batch> pool(o);
  internal::SetHeapInstancesForTest(false);
  std::mt19937 rng(3);
  test::Batch b;
  FillBatch(rng, 3, &b);
  const std::string wire = b.SerializeAsString();
  int uses = 0;
  for (; pool.Stats().fresh_arenas_now && uses < 100000; ++uses) {
    auto m = pool.Acquire();
    EXPECT_FALSE(m.new_instance());
    ASSERT_TRUE(m.ParseFrom(wire));
  }
  ASSERT_FALSE(pool.Stats().fresh_arenas_now) << uses << " uses";
  ASSERT_GT(uses, 0);
  auto first = pool.Acquire();  // the same entry, now a heap instance
  EXPECT_TRUE(first.new_instance());
  ASSERT_TRUE(first.ParseFrom(wire));
  first.reset();
  EXPECT_FALSE(pool.Acquire().new_instance());
}

TEST(MessagePoolTest, HandlesMoveAndResetEarly) {
  MessagePool<Node> pool(Reusing());
  auto a = pool.Acquire();
  a->set_name("a");
  PooledMessage<Node> b = std::move(a);
  EXPECT_FALSE(a);
  EXPECT_EQ(b->name(), "a");
  b.reset();
  EXPECT_FALSE(b);
  EXPECT_EQ(pool.Stats().in_use, 0u);
  EXPECT_EQ(pool.Stats().idle, 1u);
}

TEST(MessagePoolTest, DynamicPrototypePool) {
  google::protobuf::DynamicMessageFactory factory;
  const google::protobuf::Message* prototype =
      factory.GetPrototype(Envelope::descriptor());
  MessagePool<google::protobuf::Message> pool(prototype, Reusing());
  std::mt19937 rng(7);
  for (int i = 0; i < 100; ++i) {
    const std::string wire = test::Deterministic(RandomEnvelope(rng));
    auto m = pool.Acquire();
    EXPECT_EQ(m->GetDescriptor(), Envelope::descriptor());
    ASSERT_TRUE(m.ParseFrom(wire));
    Envelope fresh;
    ASSERT_TRUE(fresh.ParseFromString(wire));
    ASSERT_EQ(test::Deterministic(*m), test::Deterministic(fresh)) << i;
  }
  EXPECT_GT(pool.Stats().reuse_hits, 90u);
}

TEST(MessagePoolTest, StatsCountRetainedArenaBytes) {
  MessagePool<Envelope> pool(Reusing());
  std::mt19937 rng(8);
  Envelope e;
  FillBody(rng, 100, e.mutable_body());
  const std::string wire = e.SerializeAsString();
  {
    auto m = pool.Acquire();
    ASSERT_TRUE(m.ParseFrom(wire));
  }
  EXPECT_GE(pool.Stats().retained_bytes, wire.size());
  auto m = pool.Acquire();
  EXPECT_EQ(pool.Stats().retained_bytes, 0u);
}

#if ARENARPC_DEBUG_CHECKS
TEST(MessagePoolDeathTest, PoolDestroyedBeforeItsMessagesAborts) {
  EXPECT_DEATH(
      {
        auto* pool = new MessagePool<test::Batch>();
        auto* kept = new PooledMessage<test::Batch>(pool->Acquire());
        (void)kept;
        delete pool;
      },
      "MessagePool destroyed while PooledMessages are alive");
}

TEST(MessagePoolDeathTest, UseOfAnEmptyHandleAborts) {
  MessagePool<test::Batch> pool;
  PooledMessage<test::Batch> m = pool.Acquire();
  m.reset();
  EXPECT_DEATH(m->add_series(), "PooledMessage: use of an empty handle");
  PooledMessage<test::Batch> from = pool.Acquire();
  PooledMessage<test::Batch> to = std::move(from);
  EXPECT_DEATH(from.ParseFrom(""), "PooledMessage: use of an empty handle");
}
#endif

#ifdef ARENARPC_ASAN
// An idle instance's own bytes are poisoned: a pointer kept past the
// handle is reported on its next touch.
TEST(MessagePoolDeathTest, UseAfterReturnIsCaughtByAsan) {
  MessagePool<test::Batch> pool;  // a type Clear() keeps whole: reused
  ASSERT_EQ(pool.ReuseLimit(), "");
  test::Batch* late = nullptr;
  {
    auto m = pool.Acquire();
    m->add_series()->add_labels()->set_name("x");
    late = m.get();
  }
  EXPECT_DEATH(late->add_series(), "use-after-poison");
  // Reuse lifts the poison: no false report.
  auto again = pool.Acquire();
  EXPECT_EQ(again.get(), late);
  again->add_series()->add_labels()->set_name("y");
}

// A type given a fresh arena each use: the instance was on the arena's first
// page, poisoned while that arena is idle.
TEST(MessagePoolDeathTest, UseAfterReturnOnAFreshArenaIsCaughtByAsan) {
  MessagePool<Envelope> pool;
  ASSERT_NE(pool.ReuseLimit(), "");
  Envelope* late = nullptr;
  {
    auto m = pool.Acquire();
    m->set_id("x");
    late = m.get();
  }
  EXPECT_DEATH(late->set_id("late"), "use-after-poison");
}
#endif

}  // namespace
}  // namespace arenarpc
