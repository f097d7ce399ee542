// Builders of random test messages shared by the tests.
#ifndef ARENARPC_TESTS_TEST_UTIL_H_
#define ARENARPC_TESTS_TEST_UTIL_H_

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <random>
#include <string>

#include "test_messages.pb.h"

namespace arenarpc::test {

// Serialization with map entries in a fixed order, so bytes can be compared.
inline std::string Deterministic(const google::protobuf::MessageLite& m) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  const bool ok = m.SerializeToCodedStream(&coded);
  coded.Trim();
  return ok ? out : "<not serializable>";
}

inline std::string RandomString(std::mt19937& rng, size_t max_len) {
  std::uniform_int_distribution<size_t> len(0, max_len);
  std::string s(len(rng), '\0');
  for (char& c : s) c = static_cast<char>('a' + rng() % 26);
  return s;
}

inline void FillLeaf(std::mt19937& rng, Leaf* leaf) {
  leaf->set_text(RandomString(rng, 40));
  if (rng() % 2) leaf->set_data(RandomString(rng, 100));
  for (int i = 0, n = rng() % 5; i < n; ++i) leaf->add_numbers(rng());
}

// A random tree; `depth` bounds the nesting of children.
inline void FillNode(std::mt19937& rng, int depth, Node* node) {
  node->set_id(static_cast<int32_t>(rng()));
  node->set_name(RandomString(rng, 30));
  for (int i = 0, n = rng() % 4; i < n; ++i)
    node->add_tags(RandomString(rng, 20));
  for (int i = 0, n = rng() % 4; i < n; ++i) FillLeaf(rng, node->add_leaves());
  for (int i = 0, n = rng() % 3; i < n; ++i) {
    FillLeaf(rng, &(*node->mutable_by_name())[RandomString(rng, 8)]);
  }
  for (int i = 0, n = rng() % 3; i < n; ++i) {
    (*node->mutable_labels())[static_cast<int32_t>(rng() % 100)] =
        RandomString(rng, 8);
  }
  if (rng() % 2) FillLeaf(rng, node->mutable_main());
  if (rng() % 2) FillLeaf(rng, node->mutable_extra());
  switch (rng() % 3) {
    case 0:
      node->set_choice_text(RandomString(rng, 10));
      break;
    case 1:
      FillLeaf(rng, node->mutable_choice_leaf());
      break;
    default:
      break;
  }
  if (depth > 0) {
    for (int i = 0, n = rng() % 4; i < n; ++i)
      FillNode(rng, depth - 1, node->add_children());
  }
  if (rng() % 2) node->set_score(static_cast<double>(rng()) / 7.0);
  node->set_flag(rng() % 2);
}

inline void FillRecord(std::mt19937& rng, int depth, Record* r) {
  r->set_title(RandomString(rng, 40));
  for (int i = 0, n = rng() % 5; i < n; ++i) r->add_tags(RandomString(rng, 24));
  for (int i = 0, n = rng() % 4; i < n; ++i) FillLeaf(rng, r->add_leaves());
  if (rng() % 2) FillLeaf(rng, r->mutable_main());
  if (depth > 0) {
    for (int i = 0, n = rng() % 4; i < n; ++i)
      FillRecord(rng, depth - 1, r->add_children());
  }
  r->set_stamp(static_cast<int64_t>(rng()));
}

}  // namespace arenarpc::test

#endif  // ARENARPC_TESTS_TEST_UTIL_H_
