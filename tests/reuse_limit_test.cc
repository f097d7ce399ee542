// ReuseLimit against what the linked protobuf's Clear() really does: a
// message filled in every field is parsed on an arena, cleared and parsed
// again; the second parse allocates arena memory exactly when Clear() dropped
// something, which is what ReuseLimit must predict, on every version.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "arenarpc/arena.h"
#include "arenarpc/internal/protobuf_compat.h"
#include "arenarpc/message_pool.h"
#include "test_messages.pb.h"
#include "test_proto2.pb.h"

namespace arenarpc {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// Sets every field of `m` (two elements per repeated field, the last member
// of each oneof), sub-messages down to `depth` levels; strings are longer
// than any small-string buffer, so they need memory of their own.
void FillEveryField(Message* m, int depth) {
  const Descriptor* d = m->GetDescriptor();
  const Reflection* r = m->GetReflection();
  const std::string text(48, 'x');
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    const int n = f->is_repeated() ? 2 : 1;
    for (int k = 0; k < n; ++k) {
      switch (f->cpp_type()) {
        case FieldDescriptor::CPPTYPE_MESSAGE: {
          if (depth == 0 && !f->is_map()) break;
          Message* sub =
              f->is_repeated() ? r->AddMessage(m, f) : r->MutableMessage(m, f);
          if (f->is_map()) {
            // Distinct keys, so both entries stay.
            const FieldDescriptor* key = sub->GetDescriptor()->map_key();
            if (key->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
              sub->GetReflection()->SetString(sub, key,
                                              text + std::to_string(k));
            } else {
              sub->GetReflection()->SetInt32(sub, key, k + 1);
            }
            const FieldDescriptor* value = sub->GetDescriptor()->map_value();
            if (value->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
              sub->GetReflection()->SetString(sub, value, text);
            } else if (depth > 0) {
              FillEveryField(sub->GetReflection()->MutableMessage(sub, value),
                             depth - 1);
            }
          } else {
            FillEveryField(sub, depth - 1);
          }
          break;
        }
        case FieldDescriptor::CPPTYPE_STRING:
          f->is_repeated() ? r->AddString(m, f, text)
                           : r->SetString(m, f, text);
          break;
        case FieldDescriptor::CPPTYPE_INT32:
          f->is_repeated() ? r->AddInt32(m, f, 7) : r->SetInt32(m, f, 7);
          break;
        case FieldDescriptor::CPPTYPE_INT64:
          f->is_repeated() ? r->AddInt64(m, f, 7) : r->SetInt64(m, f, 7);
          break;
        case FieldDescriptor::CPPTYPE_DOUBLE:
          f->is_repeated() ? r->AddDouble(m, f, 7) : r->SetDouble(m, f, 7);
          break;
        case FieldDescriptor::CPPTYPE_BOOL:
          f->is_repeated() ? r->AddBool(m, f, true) : r->SetBool(m, f, true);
          break;
        default:
          ADD_FAILURE() << "test type has a field kind the filler lacks: "
                        << f->full_name();
      }
    }
  }
}

// Arena bytes (used, not blocks) a later parse of `wire` allocates after
// Clear(); `fresh` gets what the first parse used.
uint64_t RegrowthAfterClear(const Message& prototype, const std::string& wire,
                            uint64_t* fresh) {
  ScopedArena arena;
  Message* m = prototype.New(arena.arena());
  EXPECT_TRUE(m->ParseFromString(wire));
  *fresh = arena.arena()->SpaceUsed();
  // Twice: a first reuse may still settle (e.g. a repeated field's capacity).
  m->Clear();
  EXPECT_TRUE(m->ParseFromString(wire));
  m->Clear();
  const uint64_t settled = arena.arena()->SpaceUsed();
  EXPECT_TRUE(m->ParseFromString(wire));
  return arena.arena()->SpaceUsed() - settled;
}

void ExpectLimitMatchesClear(const Message& prototype, int depth) {
  std::unique_ptr<Message> full(prototype.New());
  FillEveryField(full.get(), depth);
  const std::string wire = full->SerializeAsString();
  const std::string limit = internal::ReuseLimit(prototype.GetDescriptor());
  uint64_t fresh = 0;
  const uint64_t regrown = RegrowthAfterClear(prototype, wire, &fresh);
  if (!internal::kArenaParseRecreatesStrings) {
    // 3.21 and 23.x: nothing is allocated again exactly when Clear() kept
    // everything.
    EXPECT_EQ(limit.empty(), regrown == 0)
        << prototype.GetTypeName() << ": ReuseLimit \"" << limit << "\", yet "
        << regrown << " of " << fresh
        << " arena bytes allocated again after Clear()";
  } else if (limit.empty()) {
    // v24+ (33.6 measured): parsing a singular string field into an arena
    // message builds a new std::string object on the arena (32 bytes per
    // field per use), so even a type Clear() keeps re-allocates some bytes;
    // the structure (sub-messages, repeated elements) must stay.
    EXPECT_LT(regrown * 2, fresh)
        << prototype.GetTypeName() << ": ReuseLimit empty, yet " << regrown
        << " of " << fresh << " bytes again";
  } else {
    EXPECT_GT(regrown, 0u) << prototype.GetTypeName() << ": ReuseLimit \""
                           << limit << "\", yet nothing allocated again";
  }
  std::printf("%s: %llu of %llu arena bytes again after Clear()\n",
              std::string(prototype.GetTypeName()).c_str(),
              static_cast<unsigned long long>(regrown),
              static_cast<unsigned long long>(fresh));
}

TEST(ReuseLimitTest, PredictsWhatThisProtobufsClearKeeps) {
  ExpectLimitMatchesClear(test::Leaf::default_instance(), 2);
  ExpectLimitMatchesClear(test::Node::default_instance(), 2);
  ExpectLimitMatchesClear(test::Record::default_instance(), 2);
  ExpectLimitMatchesClear(test::Body::default_instance(), 2);
  ExpectLimitMatchesClear(test::Envelope::default_instance(), 2);
  ExpectLimitMatchesClear(test::Batch::default_instance(), 3);
  ExpectLimitMatchesClear(test::Extendable::default_instance(), 1);
}

TEST(ReuseLimitTest, NamesTheFirstFieldClearDoesNotKeep) {
  EXPECT_EQ(internal::ReuseLimit(test::Batch::descriptor()), "");
  EXPECT_EQ(internal::ReuseLimit(test::Leaf::descriptor()), "");
  if (internal::kProto3SingularMessagesHaveHasbits) {
    // v23+: Clear() keeps `head` (it has a has-bit now).
    EXPECT_EQ(internal::ReuseLimit(test::Body::descriptor()), "");
    EXPECT_EQ(internal::ReuseLimit(test::Envelope::descriptor()),
              "alt: oneof member (destroyed when the oneof is cleared)");
  } else {
    EXPECT_EQ(internal::ReuseLimit(test::Body::descriptor()),
              "head: proto3 message field without has-bit (deleted by Clear)");
    EXPECT_EQ(internal::ReuseLimit(test::Envelope::descriptor()),
              "body: proto3 message field without has-bit (deleted by Clear)");
  }
  EXPECT_EQ(internal::ReuseLimit(test::Node::descriptor()),
            "by_name: map field (entries are destroyed)");
  MessagePool<test::Envelope> pool;
  EXPECT_EQ(pool.ReuseLimit(),
            internal::ReuseLimit(test::Envelope::descriptor()));
}

}  // namespace
}  // namespace arenarpc
