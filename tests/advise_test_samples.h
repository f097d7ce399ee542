// Sample requests of the test protos for arenarpc_advise's tests and its
// calibration (tests/advise_calibrate.cc): deterministic, of several
// shapes and sizes.
#ifndef ARENARPC_TESTS_ADVISE_TEST_SAMPLES_H_
#define ARENARPC_TESTS_ADVISE_TEST_SAMPLES_H_

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "test_messages.pb.h"

namespace arenarpc::test {

inline Leaf MakeLeaf(int i, int size) {
  Leaf leaf;
  leaf.set_text(absl::StrCat("leaf-", i, std::string(size % 40, 'x')));
  leaf.set_data(std::string(size, static_cast<char>('a' + i % 26)));
  for (int k = 0; k < size % 7; ++k) leaf.add_numbers(i * 1000 + k);
  return leaf;
}

// A tree with every field kind; `scale` multiplies its repeated parts.
inline Node MakeNode(int i, int scale) {
  Node n;
  n.set_id(i);
  n.set_name(absl::StrCat("node-", i));
  for (int k = 0; k < 2 * scale; ++k) n.add_tags(absl::StrCat("tag-", k));
  for (int k = 0; k < scale; ++k) *n.add_leaves() = MakeLeaf(i + k, 8 + k % 32);
  for (int k = 0; k < scale / 2; ++k)
    (*n.mutable_by_name())[absl::StrCat("k", k)] = MakeLeaf(k, 4);
  for (int k = 0; k < scale / 2; ++k)
    (*n.mutable_labels())[k] = absl::StrCat("v", k);
  *n.mutable_main() = MakeLeaf(i, 16);
  if (i % 2 == 0) *n.mutable_extra() = MakeLeaf(i + 1, 12);
  if (i % 3 == 0) {
    n.set_choice_text("choice");
  } else {
    *n.mutable_choice_leaf() = MakeLeaf(i, 6);
  }
  if (scale > 1) {
    for (int k = 0; k < 2; ++k)
      *n.add_children() = MakeNode(i * 3 + k, scale / 4);
  }
  n.set_score(i * 0.5);
  n.set_flag(i % 2 == 0);
  return n;
}

// The remote-write shape: all repeated, Clear() keeps every byte.
inline Batch MakeBatch(int i, int series) {
  Batch b;
  for (int s = 0; s < series; ++s) {
    Series* x = b.add_series();
    for (int l = 0; l < 4; ++l) {
      Label* label = x->add_labels();
      label->set_name(absl::StrCat("label", l));
      label->set_value(absl::StrCat("value-", i + s + l));
    }
    for (int k = 0; k < 3; ++k) {
      Sample* sample = x->add_samples();
      sample->set_value(s * 0.25 + k);
      sample->set_timestamp(1700000000000LL + i * 1000 + k);
    }
  }
  return b;
}

// The proto3 trap: the bulk sits under a field Clear() deletes (3.21).
inline Envelope MakeEnvelope(int i, int leaves) {
  Envelope e;
  e.set_id(absl::StrCat("env-", i));
  for (int k = 0; k < leaves; ++k)
    *e.mutable_body()->add_leaves() = MakeLeaf(i + k, 24);
  for (int k = 0; k < leaves; ++k)
    e.mutable_body()->add_names(absl::StrCat("name-", k));
  *e.mutable_body()->mutable_head() = MakeLeaf(i, 8);
  return e;
}

// Writes each message to dir/NNNNNN.bin (the capture layout), and `type`
// to dir/TYPE unless empty.
inline void WriteSamples(const std::string& dir,
                         const std::vector<std::string>& wires,
                         const std::string& type) {
  std::filesystem::create_directories(dir);
  for (size_t i = 0; i < wires.size(); ++i) {
    char name[32];
    std::snprintf(name, sizeof(name), "/%06zu.bin", i);
    std::ofstream(dir + name, std::ios::binary) << wires[i];
  }
  if (!type.empty()) std::ofstream(dir + "/TYPE") << type << "\n";
}

}  // namespace arenarpc::test

#endif  // ARENARPC_TESTS_ADVISE_TEST_SAMPLES_H_
