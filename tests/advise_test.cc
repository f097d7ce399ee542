// arenarpc_advise's library (tools/advise): the recommendation rule, the
// advice on linked test types, sample directories and their errors.
#include "advise.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "advise_test_samples.h"
#include "alloc_count.h"
#include "arenarpc/cost_probe.h"
#include "recommend.h"
#include "report.h"
#include "samples.h"
#include "schema.h"

namespace arenarpc::advise {
namespace {

constexpr AllocationMode kHeap = AllocationMode::kHeap;
constexpr AllocationMode kArena = AllocationMode::kArena;
constexpr AllocationMode kReuse = AllocationMode::kReuse;

std::string TempDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "advise_test_" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

std::vector<std::string> Batches(int count, int series) {
  std::vector<std::string> wires;
  for (int i = 0; i < count; ++i)
    wires.push_back(test::MakeBatch(i, series).SerializeAsString());
  return wires;
}

ModeCosts Costs(double heap, double arena, double reuse) {
  ModeCosts c;
  c.ok = true;
  c.ns = {heap, arena, reuse};
  return c;
}

// The rule in recommend.h, written out again independently: arena or
// reuse must beat heap by more than 3% and three standard errors of the
// paired ratio; reuse over arena only if it beats arena the same way.
AllocationMode ExpectedMode(const std::vector<ModeCosts>& samples) {
  auto beats = [&](AllocationMode a, AllocationMode b) {
    std::vector<double> r;
    for (const ModeCosts& c : samples) {
      r.push_back(c.ns[static_cast<int>(a)] / c.ns[static_cast<int>(b)] - 1);
    }
    double mean = 0;
    for (double x : r) mean += x / r.size();
    double var = 0;
    for (double x : r) var += (x - mean) * (x - mean) / (r.size() - 1);
    return mean < -0.03 && mean + 3 * std::sqrt(var / r.size()) < 0;
  };
  const bool arena = beats(kArena, kHeap), reuse = beats(kReuse, kHeap);
  if (reuse && (!arena || beats(kReuse, kArena))) return kReuse;
  return arena ? kArena : kHeap;
}

TEST(RecommendTest, FollowsTheMarginRule) {
  // Arena clearly cheaper, reuse no better than arena: arena.
  EXPECT_EQ(Recommend({Costs(100, 50, 50), Costs(200, 100, 99)}).mode, kArena);
  // Reuse 10% under arena: reuse.
  EXPECT_EQ(Recommend({Costs(100, 50, 45), Costs(200, 100, 90)}).mode, kReuse);
  // Reuse 2% under arena: arena (prefer arena within the margin).
  EXPECT_EQ(Recommend({Costs(100, 50, 49), Costs(200, 100, 98)}).mode, kArena);
  // 2% cheaper than heap is within the margin: heap.
  EXPECT_EQ(Recommend({Costs(100, 98, 98), Costs(200, 196, 196)}).mode, kHeap);
  // 20% cheaper on average, but the spread is larger: heap.
  EXPECT_EQ(Recommend({Costs(100, 40, 200), Costs(100, 120, 200),
                       Costs(100, 80, 200)})
                .mode,
            kHeap);
  // Only reuse beats heap: reuse.
  EXPECT_EQ(Recommend({Costs(100, 100, 50), Costs(200, 200, 100)}).mode,
            kReuse);
}

TEST(AllocCountTest, CountsOperatorNew) {
  const AllocCount before = ThreadAllocCount();
  auto* p = new std::vector<int>(1000);
  asm volatile("" : : "r"(p) : "memory");  // or the compiler may elide the new
  delete p;
  const AllocCount n = ThreadAllocCount() - before;
  EXPECT_EQ(n.objects, 2u);  // the vector and its buffer
  EXPECT_EQ(n.bytes, sizeof(std::vector<int>) + 1000 * sizeof(int));
}

// The recommendation is the fastest mode measured in the same run, under
// the documented rule: recomputed here from the Advice's own per-sample
// costs, and compared with an independent CostProbe run. Batch of 100
// series is the remote-write shape (every part kept by Clear(), ~1500
// allocations per message), where arena and reuse beat heap by a wide
// margin, so the independent run's verdict on heap agrees however noisy
// the machine.
TEST(AdviseTest, RecommendsTheFastestModeOfTheRun) {
  const std::string dir = TempDir("batch");
  test::WriteSamples(dir, Batches(16, 100), "");
  std::unique_ptr<Schema> schema = SchemaOf(test::Batch::descriptor()->file());
  ASSERT_NE(schema, nullptr);
  AdviseOptions options;
  options.type = "arenarpc.test.Batch";
  options.samples_dir = dir;
  options.code = Code::kGenerated;  // linked into this test: nothing to build
  absl::StatusOr<Advice> a = Advise(*schema, options);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->code, "generated (linked)");
  EXPECT_EQ(a->samples, 16);
  ASSERT_EQ(a->per_sample.size(), 16u);
  EXPECT_EQ(a->recommended, ExpectedMode(a->per_sample));
  EXPECT_EQ(a->reuse_limit, "");
  // 100 series of 4 labels and 3 samples: at least one object each.
  EXPECT_GE(a->allocs_per_message, 100 * (1 + 4 + 3));
  EXPECT_GT(a->alloc_bytes_per_message, a->allocs_per_message * 8);
  EXPECT_EQ(a->base_from, "model");
  EXPECT_DOUBLE_EQ(a->base_us,
                   kBaseUs + kBaseUsPerWireByte * a->wire_bytes_mean);
  const ModeAdvice& heap = a->modes[static_cast<int>(kHeap)];
  for (const ModeAdvice& m : a->modes) {
    EXPECT_DOUBLE_EQ(m.cpu_us_per_call, a->base_us + m.parse_destroy_us);
    EXPECT_DOUBLE_EQ(m.saving_us, heap.cpu_us_per_call - m.cpu_us_per_call);
    EXPECT_DOUBLE_EQ(m.saving_share, m.saving_us / heap.cpu_us_per_call);
  }
  EXPECT_FALSE(a->reason.empty());
  EXPECT_EQ(a->reason.find('\n'), std::string::npos);

  CostProbe probe(&test::Batch::default_instance());
  std::vector<ModeCosts> again;
  for (const std::string& wire : Batches(16, 100))
    again.push_back(probe.Measure(wire, 3));
  EXPECT_EQ(Recommend(again).mode == kHeap, a->recommended == kHeap);
}

TEST(AdviseTest, BaselineGivesTheBase) {
  const std::string dir = TempDir("baseline");
  test::WriteSamples(dir, Batches(3, 10), "");
  std::unique_ptr<Schema> schema = SchemaOf(test::Batch::descriptor()->file());
  AdviseOptions options;
  options.type = "arenarpc.test.Batch";
  options.samples_dir = dir;
  options.baseline_cpu_us = 1000;
  absl::StatusOr<Advice> a = Advise(*schema, options);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->base_from, "baseline_cpu_us");
  EXPECT_DOUBLE_EQ(a->modes[static_cast<int>(kHeap)].cpu_us_per_call, 1000);
}

TEST(AdviseTest, DynamicCodeIsCalibratedAndSaysSo) {
  const std::string dir = TempDir("dynamic");
  test::WriteSamples(dir, Batches(4, 20), "");
  std::unique_ptr<Schema> schema = SchemaOf(test::Batch::descriptor()->file());
  AdviseOptions options;
  options.type = "arenarpc.test.Batch";
  options.samples_dir = dir;
  options.code = Code::kDynamic;
  absl::StatusOr<Advice> a = Advise(*schema, options);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->code.rfind("dynamic (calibrated, expect +-", 0), 0u) << a->code;
  EXPECT_EQ(a->recommended, ExpectedMode(a->per_sample));
}

// A capture directory: NNNNNN.bin and a TYPE file naming the request type.
TEST(AdviseTest, CaptureDirectoryGivesTheType) {
  const std::string dir = TempDir("capture");
  std::vector<std::string> wires;
  for (int i = 0; i < 5; ++i)
    wires.push_back(test::MakeEnvelope(i, 8).SerializeAsString());
  test::WriteSamples(dir, wires, "arenarpc.test.Envelope");
  std::unique_ptr<Schema> schema =
      SchemaOf(test::Envelope::descriptor()->file());
  AdviseOptions options;
  options.samples_dir = dir;
  absl::StatusOr<Advice> a = Advise(*schema, options);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->type, "arenarpc.test.Envelope");
  EXPECT_EQ(a->samples, 5);
  EXPECT_EQ(a->recommended, ExpectedMode(a->per_sample));
  EXPECT_EQ(a->reuse_limit, internal::ReuseLimit(test::Envelope::descriptor()));
}

TEST(AdviseTest, MalformedSampleIsAnErrorNamingTheFile) {
  const std::string dir = TempDir("malformed");
  std::vector<std::string> wires = Batches(4, 3);
  wires[3] = std::string("\x0a\xff\xff\xff\xff\x0f", 6);
  test::WriteSamples(dir, wires, "");
  std::unique_ptr<Schema> schema = SchemaOf(test::Batch::descriptor()->file());
  AdviseOptions options;
  options.type = "arenarpc.test.Batch";
  options.samples_dir = dir;
  absl::StatusOr<Advice> a = Advise(*schema, options);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      a.status().message(),
      dir + "/000003.bin: not a valid arenarpc.test.Batch (parse failed)");
}

TEST(AdviseTest, DirectoryAndTypeErrors) {
  std::unique_ptr<Schema> schema = SchemaOf(test::Batch::descriptor()->file());
  AdviseOptions options;
  options.type = "arenarpc.test.Batch";
  options.samples_dir = TempDir("missing");
  EXPECT_EQ(Advise(*schema, options).status().code(),
            absl::StatusCode::kNotFound);

  options.samples_dir = TempDir("empty");
  std::filesystem::create_directories(options.samples_dir);
  std::ofstream(options.samples_dir + "/notes.txt") << "not a sample";
  absl::StatusOr<Advice> a = Advise(*schema, options);
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(a.status().message().find("no sample files"), std::string::npos);

  test::WriteSamples(options.samples_dir, Batches(1, 1), "");
  options.type = "arenarpc.test.NoSuchType";
  a = Advise(*schema, options);
  EXPECT_EQ(a.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(a.status().message().find("unknown type arenarpc.test.NoSuchType"),
            std::string::npos);

  options.type = "";  // and no TYPE file
  EXPECT_EQ(Advise(*schema, options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A schema this program does not link, so generated code would have to
// be built; a compiler that does not exist makes that fail at once.
std::unique_ptr<Schema> UnlinkedSchema() {
  google::protobuf::FileDescriptorSet set;
  google::protobuf::FileDescriptorProto* file = set.add_file();
  file->set_name("advise_test_unlinked.proto");
  file->set_package("advise.test");
  file->set_syntax("proto3");
  google::protobuf::DescriptorProto* m = file->add_message_type();
  m->set_name("Unlinked");
  google::protobuf::FieldDescriptorProto* f = m->add_field();
  f->set_name("s");
  f->set_number(1);
  f->set_type(google::protobuf::FieldDescriptorProto::TYPE_STRING);
  f->set_label(google::protobuf::FieldDescriptorProto::LABEL_OPTIONAL);
  return *SchemaFromSet(set, "unlinked");
}

TEST(AdviseTest, WithoutACompilerAutoFallsBackAndGeneratedFails) {
  const std::string dir = TempDir("unlinked");
  test::WriteSamples(dir,
                     {std::string("\x0a\x03"
                                  "abc",
                                  5)},
                     "advise.test.Unlinked");
  std::unique_ptr<Schema> schema = UnlinkedSchema();
  AdviseOptions options;
  options.samples_dir = dir;
  options.build.cxx = "/nonexistent/c++";
  options.build.cache_dir = TempDir("unlinked_cache");
  absl::StatusOr<Advice> a = Advise(*schema, options);  // Code::kAuto
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->code.rfind("dynamic (calibrated", 0), 0u) << a->code;
  ASSERT_EQ(a->warnings.size(), 1u);
  EXPECT_NE(a->warnings[0].find("generated code unavailable"),
            std::string::npos);

  options.code = Code::kGenerated;
  a = Advise(*schema, options);
  ASSERT_FALSE(a.ok());
  // A static libprotobuf (e.g. the 33.6 build) stops it before the compiler.
  EXPECT_TRUE(
      a.status().message().find("/nonexistent/c++") != std::string::npos ||
      a.status().message().find("static libprotobuf") != std::string::npos)
      << a.status();
}

TEST(SamplesTest, SortedByNameAndBounded) {
  const std::string dir = TempDir("sorted");
  test::WriteSamples(dir, {"c", "a", "b"}, "pkg.T");
  std::ofstream(dir + "/zzz.txt") << "ignored";
  absl::StatusOr<Samples> s = ReadSamples(dir, 2);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->type, "pkg.T");
  ASSERT_EQ(s->samples.size(), 2u);
  EXPECT_EQ(s->samples[0].wire, "c");  // 000000.bin
  EXPECT_EQ(s->samples[1].wire, "a");
}

TEST(SchemaTest, LoadsProtosAndRejectsGarbage) {
  absl::StatusOr<std::unique_ptr<Schema>> s =
      LoadProtos({"test_messages.proto"}, {ARENARPC_TEST_PROTO_DIR});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_NE((*s)->pool.FindMessageTypeByName("arenarpc.test.Node"), nullptr);

  EXPECT_FALSE(LoadProtos({"no_such.proto"}, {ARENARPC_TEST_PROTO_DIR}).ok());
  const std::string garbage = TempDir("garbage.pb");
  std::ofstream(garbage) << "\xff\xff\xff";
  EXPECT_EQ(LoadDescriptorSet(garbage).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LoadDescriptorSet(garbage + ".missing").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(ReportTest, JsonHasTheRequiredKeys) {
  const std::string dir = TempDir("json");
  test::WriteSamples(dir, Batches(2, 5), "");
  std::unique_ptr<Schema> schema = SchemaOf(test::Batch::descriptor()->file());
  AdviseOptions options;
  options.type = "arenarpc.test.Batch";
  options.samples_dir = dir;
  absl::StatusOr<Advice> a = Advise(*schema, options);
  ASSERT_TRUE(a.ok()) << a.status();
  google::protobuf::Struct json;
  ASSERT_TRUE(
      google::protobuf::util::JsonStringToMessage(FormatJson(*a), &json).ok());
  for (const char* key :
       {"type", "protobuf", "code", "samples", "wire_bytes_mean",
        "allocs_per_message", "alloc_bytes_per_message", "modes", "auto",
        "recommended", "reason", "base_us", "base_from"}) {
    EXPECT_EQ(json.fields().count(key), 1u) << key;
  }
  for (const char* mode : {"heap", "arena", "reuse"}) {
    const google::protobuf::Struct& m = json.fields()
                                            .at("modes")
                                            .struct_value()
                                            .fields()
                                            .at(mode)
                                            .struct_value();
    for (const char* key :
         {"parse_destroy_us", "cpu_us_per_call", "saving_us", "saving_share"}) {
      EXPECT_EQ(m.fields().count(key), 1u) << mode << "." << key;
    }
  }
  EXPECT_EQ(json.fields().at("recommended").string_value(),
            AllocationModeName(a->recommended));
  EXPECT_NE(FormatTable(*a).find("recommended: "), std::string::npos);
}

}  // namespace
}  // namespace arenarpc::advise
