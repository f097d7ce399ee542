#include "arenarpc/message_pool.h"

#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

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
  for (int i = 0, n = rng() % 4; i < n; ++i) body->add_names(test::RandomString(rng, 30));
  switch (rng() % 3) {
    case 0: test::FillLeaf(rng, body->mutable_head()); break;
    case 1: body->mutable_head(); break;  // present but empty
    default: break;
  }
}

Envelope RandomEnvelope(std::mt19937& rng) {
  Envelope e;
  if (rng() % 2) e.set_id(test::RandomString(rng, 20));
  switch (rng() % 4) {
    case 0: FillBody(rng, rng() % 40, e.mutable_body()); break;
    case 1: e.mutable_body(); break;  // explicit empty body
    default: break;                   // no body
  }
  if (rng() % 3 == 0) FillBody(rng, rng() % 5, e.mutable_extra());
  for (int i = 0, n = rng() % 3; i < n; ++i) FillBody(rng, rng() % 5, e.add_items());
  switch (rng() % 3) {
    case 0: FillBody(rng, rng() % 3, e.mutable_alt()); break;
    case 1: e.set_note(test::RandomString(rng, 10)); break;
    default: break;
  }
  return e;
}

TEST(MessagePoolTest, AcquiredMessageIsEmpty) {
  MessagePool<Node> pool;
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
  EXPECT_EQ(pool.Stats().reuse_hits, 19u);  // one instance, reused
}

TEST(MessagePoolTest, ExtensionsAreCleared) {
  MessagePool<test::Extendable> pool;
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
  MessagePool<Envelope> envelopes;
  MessagePool<Node> nodes;
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

TEST(MessagePoolTest, KeepsTheCapacityOfASubtreeWithoutHasBit) {
  MessagePool<Envelope> pool;
  std::mt19937 rng(3);
  Envelope big;
  FillBody(rng, 1000, big.mutable_body());
  Envelope small;
  FillBody(rng, 1, small.mutable_body());
  const Body* body_before;
  {
    auto m = pool.Acquire();
    ASSERT_TRUE(m.ParseFrom(big.SerializeAsString()));
    body_before = &m->body();
  }
  {
    auto m = pool.Acquire();
    ASSERT_TRUE(m.ParseFrom(small.SerializeAsString()));
    EXPECT_EQ(&m->body(), body_before);  // the same sub-message object
    EXPECT_GE(m->body().leaves().Capacity(), 1000);  // with its capacity
    EXPECT_EQ(m->body().leaves_size(), 1);
  }
  {
    // A request without the field: absent, as in a fresh parse...
    auto m = pool.Acquire();
    Envelope none;
    none.set_id("no body");
    ASSERT_TRUE(m.ParseFrom(none.SerializeAsString()));
    EXPECT_FALSE(m->has_body());
  }
  {
    // ...and the kept subtree is still there for the next one.
    auto m = pool.Acquire();
    ASSERT_TRUE(m.ParseFrom(small.SerializeAsString()));
    EXPECT_EQ(&m->body(), body_before);
    EXPECT_GE(m->body().leaves().Capacity(), 1000);
  }
  {
    // An explicitly empty body on the wire is present.
    Envelope empty_body;
    empty_body.mutable_body();
    auto m = pool.Acquire();
    ASSERT_TRUE(m.ParseFrom(empty_body.SerializeAsString()));
    EXPECT_TRUE(m->has_body());
    EXPECT_EQ(m->SerializeAsString(), empty_body.SerializeAsString());
  }
}

TEST(MessagePoolTest, MalformedInputFailsAndLosesNothing) {
  MessagePool<Envelope> pool;
  std::mt19937 rng(4);
  Envelope good;
  FillBody(rng, 50, good.mutable_body());
  const std::string wire = good.SerializeAsString();
  { auto m = pool.Acquire(); ASSERT_TRUE(m.ParseFrom(wire)); }
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
  MessagePoolOptions o;
  o.hard_cap_bytes = 20000;
  o.min_bound_bytes = 1000;
  o.large_reserve_bytes = 0;  // no room for large instances
  MessagePool<Envelope> pool(o);
  std::mt19937 rng(5);
  Envelope big;
  FillBody(rng, 1000, big.mutable_body());
  ASSERT_GT(big.ByteSizeLong(), o.hard_cap_bytes);
  { auto m = pool.Acquire(); ASSERT_TRUE(m.ParseFrom(big.SerializeAsString())); }
  MessagePoolStats s = pool.Stats();
  EXPECT_EQ(s.evicted_by_guard, 1u);
  EXPECT_EQ(s.idle, 0u);
  // Built by hand, sized by the caller's serialization (cached size).
  {
    auto m = pool.Acquire();
    m->CopyFrom(big);
    m->SerializeAsString();
  }
  EXPECT_EQ(pool.Stats().evicted_by_guard, 2u);
  // Small ones are kept.
  { auto m = pool.Acquire(); m->set_id("small"); }
  s = pool.Stats();
  EXPECT_EQ(s.evicted_by_guard, 2u);
  EXPECT_EQ(s.idle, 1u);
  EXPECT_EQ(s.created, 3u);
}

TEST(MessagePoolTest, BoundAdaptsToRecentSizes) {
  MessagePoolOptions o;
  o.hard_cap_bytes = 10 << 20;
  o.min_bound_bytes = 1024;
  o.large_reserve_bytes = 0;
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
  { auto m = pool.Acquire(); ASSERT_TRUE(m.ParseFrom(big.SerializeAsString())); }
  EXPECT_EQ(pool.Stats().evicted_by_guard, 1u);
}

TEST(MessagePoolTest, LargeInputsReuseReservedLargeInstances) {
  MessagePoolOptions o;
  o.hard_cap_bytes = 20000;
  o.min_bound_bytes = 1000;
  std::mt19937 rng(9);
  Envelope big;
  FillBody(rng, 1000, big.mutable_body());
  const std::string big_wire = big.SerializeAsString();
  o.large_reserve_bytes = 2 * big_wire.size();  // room for two
  MessagePool<Envelope> pool(o);
  Envelope small;
  small.set_id("small");
  const std::string small_wire = small.SerializeAsString();
  {
    // Three large at once: two fit in the reserve, the third is destroyed.
    auto a = pool.Acquire(), b = pool.Acquire(), c = pool.Acquire();
    for (auto* h : {&a, &b, &c}) ASSERT_TRUE(h->ParseFrom(big_wire));
  }
  MessagePoolStats s = pool.Stats();
  EXPECT_EQ(s.large_kept, 2u);
  EXPECT_EQ(s.evicted_by_guard, 1u);
  // Small inputs do not get the large instances...
  {
    auto m = pool.Acquire();
    ASSERT_TRUE(m.ParseFrom(small_wire));
    EXPECT_LT(m->body().leaves().Capacity(), 1000);
    EXPECT_EQ(pool.Stats().large_kept, 2u);
  }
  // ...large ones do, through ParseFrom (which may change get()).
  {
    auto m = pool.Acquire();
    ASSERT_TRUE(m.ParseFrom(big_wire));
    EXPECT_GE(m->body().leaves().Capacity(), 1000);
    EXPECT_EQ(test::Deterministic(*m), test::Deterministic(big));
    EXPECT_EQ(pool.Stats().large_kept, 1u);
    EXPECT_EQ(pool.Stats().large_reused, 1u);
  }
  s = pool.Stats();
  EXPECT_EQ(s.large_kept, 2u);
  EXPECT_EQ(s.in_use, 0u);
  EXPECT_EQ(s.created, 4u);  // three large, then one small (reserve untouched)
  EXPECT_EQ(s.idle, 3u);
}

TEST(MessagePoolTest, IdleInstancesAreBounded) {
  MessagePoolOptions o;
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

TEST(MessagePoolTest, HandlesMoveAndResetEarly) {
  MessagePool<Node> pool;
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
  MessagePool<google::protobuf::Message> pool(prototype);
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

TEST(MessagePoolTest, StatsEstimateRetainedBytes) {
  MessagePool<Envelope> pool;
  std::mt19937 rng(8);
  Envelope e;
  FillBody(rng, 100, e.mutable_body());
  const std::string wire = e.SerializeAsString();
  { auto m = pool.Acquire(); ASSERT_TRUE(m.ParseFrom(wire)); }
  EXPECT_EQ(pool.Stats().retained_bytes_estimate, wire.size());
  auto m = pool.Acquire();
  EXPECT_EQ(pool.Stats().retained_bytes_estimate, 0u);
}

}  // namespace
}  // namespace arenarpc
