// kAuto's decisions file (AutoOptions::decisions_path,
// arenarpc/grpc/auto_decisions.h): the format's round trip, bad and stale
// files, a changed schema, loading into installed methods, saving, and a
// server that starts settled. Own binary: the methods and the file store
// are process-wide.
#include "arenarpc/grpc/auto_decisions.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "arenarpc/grpc/install.h"
#include "arenarpc/grpc/internal/method_meter.h"
#include "arenarpc/grpc/stats.h"
#include "arenarpc/mode_chooser.h"
#include "echo_service.h"
#include "grpc/grpc_test_util.h"
#include "src/grpc/decision_file.h"

namespace arenarpc {
namespace {

using echo::EchoRequest;
using echo::EchoResponse;
using internal::DecisionEntry;
using testing::WaitFor;

MeasuredMethodStats StatsOf(const std::string& method) {
  for (const MeasuredMethodStats& s : GetMeasuredMethodStats()) {
    if (s.method == method) return s;
  }
  return {};
}

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/arenarpc_decisions_" +
         std::to_string(getpid()) + "_" + name;
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// A file's text; fails the test where the entries cannot be formatted.
std::string Format(const std::vector<DecisionEntry>& entries) {
  const absl::StatusOr<std::string> text = internal::FormatDecisions(entries);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : std::string();
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The echo method's identity, as installs see it.
DecisionEntry EchoId(const std::string& method) {
  DecisionEntry e;
  e.method = method;
  e.request_type = "arenarpc.echo.EchoRequest";
  e.response_type = "arenarpc.echo.EchoResponse";
  e.schema = internal::SchemaFingerprint(EchoRequest::descriptor(),
                                         EchoResponse::descriptor());
  e.protobuf = internal::ProtobufVersion();
  return e;
}

DecisionEntry EchoDecision(const std::string& method, AllocationMode mode) {
  DecisionEntry e = EchoId(method);
  e.mode = mode;
  e.source = DecisionSource::kPrior;
  e.cost_us = {0, 1900.5, 1302.1};
  e.calls = 24;
  e.saved_unix_s = 1795000000;
  return e;
}

// A cost that is no number has no JSON form: a clear error on every
// protobuf version, not a file that reads it back as 0 (3.21's printer
// writes "Infinity"). Seen red without
// FormatDecisions' isfinite check on 3.21 (a file, "arena": "Infinity").
TEST(AutoDecisionsFileTest, AnInfiniteCostIsAnErrorNotAFile) {
  DecisionEntry e = EchoDecision("/p.S/A", AllocationMode::kReuse);
  e.cost_us[1] = std::numeric_limits<double>::infinity();
  const absl::StatusOr<std::string> text = internal::FormatDecisions({e});
  ASSERT_FALSE(text.ok()) << *text;
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(text.status().message().find("/p.S/A"), std::string::npos);
  e.cost_us[1] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(internal::FormatDecisions({e}).ok());
}

// Seen red with ReadEntry's `e->mode = *m;` removed (every mode read back
// as arena).
TEST(AutoDecisionsFileTest, RoundTripKeepsEveryField) {
  const std::vector<DecisionEntry> in = {
      EchoDecision("/p.S/A", AllocationMode::kReuse),
      EchoDecision("/p.S/B", AllocationMode::kHeap)};
  std::vector<std::string> skipped;
  const auto out = internal::ParseDecisions(Format(in), &skipped);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(skipped.empty());
  ASSERT_EQ(out->size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const DecisionEntry& a = in[i];
    const DecisionEntry& b = (*out)[i];
    EXPECT_EQ(a.method, b.method);
    EXPECT_EQ(a.request_type, b.request_type);
    EXPECT_EQ(a.response_type, b.response_type);
    EXPECT_EQ(a.schema, b.schema);
    EXPECT_EQ(a.protobuf, b.protobuf);
    EXPECT_EQ(a.mode, b.mode);
    EXPECT_EQ(a.source, b.source);
    EXPECT_EQ(a.cost_us, b.cost_us);
    EXPECT_EQ(a.calls, b.calls);
    EXPECT_EQ(a.saved_unix_s, b.saved_unix_s);
  }
}

// Whole-file problems are errors (the file ignored), entry problems skip
// that entry; nothing crashes. Seen red with the version check
// (`*version > kDecisionFileVersion`) made false (a version-2 file read).
TEST(AutoDecisionsFileTest, BadFilesAreErrorsAndBadEntriesAreSkipped) {
  std::vector<std::string> skipped;
  auto parse = [&](const std::string& text) {
    skipped.clear();
    return internal::ParseDecisions(text, &skipped);
  };
  EXPECT_EQ(parse("{{").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parse("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parse("[1, 2]").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parse(R"({"format": "something else", "version": 1,
                      "decisions": []})")
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parse(R"({"format": "arenarpc auto decisions", "version": 1.5,
                      "decisions": []})")
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parse(R"({"format": "arenarpc auto decisions", "version": 2,
                      "decisions": []})")
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(parse(R"({"format": "arenarpc auto decisions", "version": 1})")
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  // A file cut short (a writer that did not rename atomically).
  const std::string good =
      Format({EchoDecision("/p.S/A", AllocationMode::kReuse)});
  EXPECT_EQ(parse(good.substr(0, good.size() / 2)).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Entries: one good, the rest skipped with a reason each.
  const auto out = parse(R"({"format": "arenarpc auto decisions",
      "version": 1, "decisions": [
      "not an object",
      {"method": "/p.S/A", "request_type": "a.Req", "response_type": "a.Resp",
       "schema": "00", "protobuf": 3021012, "mode": "auto"},
      {"method": "/p.S/B", "request_type": "a.Req", "response_type": "a.Resp",
       "schema": "00", "protobuf": 3021012, "mode": "fast"},
      {"method": "/p.S/C", "request_type": "a.Req", "response_type": "a.Resp",
       "protobuf": 3021012, "mode": "arena"},
      {"method": "/p.S/D", "request_type": "a.Req", "response_type": "a.Resp",
       "schema": "00", "protobuf": "3021012", "mode": "arena"},
      {"method": "/p.S/E", "request_type": "a.Req", "response_type": "a.Resp",
       "schema": "00", "protobuf": 3021012, "mode": "arena",
       "calls": -4, "cost_us": {"arena": "x"}, "extra": [1]}]})");
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ((*out)[0].method, "/p.S/E");
  EXPECT_EQ((*out)[0].calls, 0u);  // a bad number: unknown, not negative
  EXPECT_EQ((*out)[0].cost_us[1], 0);
  EXPECT_EQ(skipped.size(), 5u);
  // Files: missing, a directory, unreadable bytes.
  EXPECT_EQ(LoadAutoDecisions(TempPath("missing")).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_FALSE(LoadAutoDecisions("/").ok());
  const std::string binary = TempPath("binary");
  WriteText(binary, std::string("\0\xff\xfe{", 4));
  EXPECT_EQ(LoadAutoDecisions(binary).status().code(),
            absl::StatusCode::kInvalidArgument);
  unlink(binary.c_str());
}

// A type with one field more than EchoRequest (built at run time).
const google::protobuf::Descriptor* EchoRequestPlusAField(
    google::protobuf::DescriptorPool* pool) {
  google::protobuf::FileDescriptorProto file;
  EchoRequest::descriptor()->file()->CopyTo(&file);
  for (auto& m : *file.mutable_message_type()) {
    if (m.name() != "EchoRequest") continue;
    auto* f = m.add_field();
    f->set_name("added_later");
    f->set_number(999);
    f->set_type(google::protobuf::FieldDescriptorProto::TYPE_INT64);
    f->set_label(google::protobuf::FieldDescriptorProto::LABEL_OPTIONAL);
  }
  file.clear_service();  // no generic services needed
  const google::protobuf::FileDescriptor* built = pool->BuildFile(file);
  return built == nullptr ? nullptr
                          : built->FindMessageTypeByName("EchoRequest");
}

// Seen red with SchemaFingerprint's `h = Fnv1a(h, bytes);` removed (a
// field added to the request went unnoticed).
TEST(AutoDecisionsFileTest, SchemaFingerprintFollowsTheMessages) {
  const std::string echo = internal::SchemaFingerprint(
      EchoRequest::descriptor(), EchoResponse::descriptor());
  EXPECT_EQ(echo.size(), 16u);
  EXPECT_EQ(echo, internal::SchemaFingerprint(EchoRequest::descriptor(),
                                              EchoResponse::descriptor()));
  EXPECT_NE(echo, internal::SchemaFingerprint(EchoResponse::descriptor(),
                                              EchoRequest::descriptor()));
  google::protobuf::DescriptorPool pool;
  const google::protobuf::Descriptor* changed = EchoRequestPlusAField(&pool);
  ASSERT_NE(changed, nullptr);
  // Same full name, another field: another schema.
  EXPECT_EQ(changed->full_name(), EchoRequest::descriptor()->full_name());
  EXPECT_NE(echo,
            internal::SchemaFingerprint(changed, EchoResponse::descriptor()));
}

// Never destroyed (a meter outlives every call), and reachable: kept here.
internal::MethodMeter* NewAutoMeter(const std::string& name,
                                    const AutoOptions& automatic = {}) {
  static auto* const meters = new std::vector<internal::MethodMeter*>();
  meters->push_back(
      new internal::MethodMeter(name, AllocationMode::kAuto, ShadowOptions{},
                                &EchoRequest::default_instance(),
                                &EchoResponse::default_instance(), automatic));
  return meters->back();
}

// Only entries that match an installed kAuto method start it: another
// protobuf version, other message types, a changed schema, an unknown
// method are skipped (one line each). Seen red with LoadAutoDecisions'
// Mismatch() taken as always empty (B, C, D started too).
TEST(AutoDecisionsLoadTest, LoadsOnlyMatchingEntries) {
  internal::MethodMeter* a = NewAutoMeter("/t.L/A");
  NewAutoMeter("/t.L/B");
  NewAutoMeter("/t.L/C");
  NewAutoMeter("/t.L/D");
  std::vector<DecisionEntry> file = {
      EchoDecision("/t.L/A", AllocationMode::kReuse),
      EchoDecision("/t.L/B", AllocationMode::kReuse),
      EchoDecision("/t.L/C", AllocationMode::kReuse),
      EchoDecision("/t.L/D", AllocationMode::kReuse),
      EchoDecision("/t.L/Unknown", AllocationMode::kReuse)};
  file[1].protobuf += 1;  // another protobuf
  file[2].request_type = "arenarpc.echo.Item";
  file[3].schema = "0123456789abcdef";  // the .proto changed
  const std::string path = TempPath("load");
  WriteText(path, Format(file));
  const absl::StatusOr<int> started = LoadAutoDecisions(path);
  ASSERT_TRUE(started.ok()) << started.status();
  EXPECT_EQ(*started, 1);
  const MeasuredMethodStats s = StatsOf("/t.L/A");
  EXPECT_TRUE(s.settled);
  EXPECT_EQ(s.mode, AllocationMode::kReuse);
  EXPECT_EQ(s.decision_source, DecisionSource::kLoaded);
  EXPECT_DOUBLE_EQ(s.cost_us[2], 1302.1);
  for (const char* m : {"/t.L/B", "/t.L/C", "/t.L/D"}) {
    EXPECT_FALSE(StatsOf(m).settled) << m;
    EXPECT_EQ(StatsOf(m).decision_source, DecisionSource::kNone) << m;
  }
  // Its calls run in reuse, untimed (no trial).
  for (int i = 0; i < 10; ++i) {
    internal::MethodMeter::CallTiming t;
    EXPECT_EQ(a->ModeForCall(1000, &t), AllocationMode::kReuse);
    EXPECT_EQ(t.meter, nullptr);
  }
  // Loading again changes nothing: A decided already.
  EXPECT_EQ(*LoadAutoDecisions(path), 0);
  unlink(path.c_str());
}

// The calling thread's work: a call's CPU.
void BurnCpu(double ns) {
  const double start = internal::MethodMeter::ThreadCpuNs();
  volatile uint64_t x = 1;
  while (internal::MethodMeter::ThreadCpuNs() - start < ns) x = x * 3 + 1;
}

// Saved atomically (no temporary left), the decisions of this process
// and the entries of other methods from the file loaded; a decision
// settled with decisions_path set is saved on its own, off the call path.
// Seen red with SaveAutoDecisions keeping no entry of another method
// (`installed.count(e.method) == 0` made false).
TEST(AutoDecisionsSaveTest, SavesOnSettleAndKeepsOtherMethods) {
  const std::string dir = TempPath("dir");
  mkdir(dir.c_str(), 0755);
  const std::string path = dir + "/decisions.json";
  // Another replica's file: a method this process does not install.
  WriteText(path, Format({EchoDecision("/t.Other/M", AllocationMode::kArena)}));
  AutoOptions automatic;
  automatic.max_cpu_share = 1.0;  // every call may be timed
  automatic.decisions_path = path;
  internal::MethodMeter* m = NewAutoMeter("/t.S/Learns", automatic);
  EXPECT_FALSE(StatsOf("/t.S/Learns").settled);  // no entry: it learns
  // Calls of 1000 bytes: heap 0.6 ms, arena 0.4 ms, reuse 0.2 ms of CPU.
  const double cost[] = {6e5, 4e5, 2e5};
  for (int call = 0; call < 600 && !StatsOf("/t.S/Learns").settled; ++call) {
    internal::MethodMeter::CallTiming t;
    const AllocationMode mode = m->ModeForCall(1000, &t);
    BurnCpu(cost[static_cast<int>(mode)]);
    if (t.meter != nullptr) m->EndTimedCall(t);
  }
  ASSERT_TRUE(StatsOf("/t.S/Learns").settled);
  std::vector<DecisionEntry> saved;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto parsed = internal::ParseDecisions(ReadText(path), nullptr);
        if (!parsed.ok() || parsed->size() < 2) return false;
        saved = *parsed;
        return true;
      },
      std::chrono::seconds(10)));
  bool learned = false;
  bool other = false;
  for (const DecisionEntry& e : saved) {
    if (e.method == "/t.S/Learns") {
      learned = true;
      EXPECT_EQ(e.mode, AllocationMode::kReuse);
      EXPECT_EQ(e.schema, EchoId("x").schema);
      EXPECT_GT(e.calls, 0u);
      EXPECT_GT(e.cost_us[2], 0);
    }
    if (e.method == "/t.Other/M") other = true;
  }
  EXPECT_TRUE(learned);
  EXPECT_TRUE(other);
  // An explicit save: the same, and no temporary file left beside it.
  ASSERT_TRUE(SaveAutoDecisions(path).ok());
  EXPECT_EQ(std::system(("test $(ls -A " + dir + " | wc -l) -eq 1").c_str()),
            0);
  // Errors: a missing directory.
  EXPECT_EQ(SaveAutoDecisions(dir + "/no/such/dir/d.json").code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(std::system(("rm -rf " + dir).c_str()), 0);
}

// A server whose method has a decision in its decisions file: its first
// calls run in the loaded mode with no trial; stats and Prometheus say
// where the decision came from. Seen red with the MethodMeter
// constructor's StartSettled() call removed (the first calls were
// trials).
TEST(AutoDecisionsServerTest, FirstCallsRunInTheLoadedMode) {
  const std::string method = "arenarpc.echo.EchoService/Echo";
  const std::string path = TempPath("server");
  WriteText(path, Format({EchoDecision(method, AllocationMode::kReuse)}));
  ServerOptions options(AllocationMode::kAuto);
  options.automatic.max_cpu_share = 1.0;  // trials would be taken at once
  options.automatic.decisions_path = path;
  options.automatic.save_decisions = false;
  testing::EchoServer server(options);
  auto stub = echo::EchoService::NewStub(server.NewChannel());
  const uint64_t reuse_before =
      GetGrpcStats().modes[static_cast<int>(AllocationMode::kReuse)].calls;
  for (int i = 0; i < 20; ++i) {
    grpc::ClientContext context;
    EchoRequest request;
    echo::BuildEchoRequest(20, 1, &request);
    EchoResponse response;
    ASSERT_TRUE(stub->Echo(&context, request, &response).ok());
  }
  // gRPC releases a call's messages just after the client has its response.
  EXPECT_TRUE(WaitFor([&] {
    return GetGrpcStats()
                   .modes[static_cast<int>(AllocationMode::kReuse)]
                   .calls -
               reuse_before ==
           20;
  }));
  const MeasuredMethodStats s = StatsOf(method);
  EXPECT_EQ(s.timed_calls, 0u);
  EXPECT_EQ(s.samples, 0u);
  EXPECT_TRUE(s.settled);
  EXPECT_EQ(s.mode, AllocationMode::kReuse);
  EXPECT_EQ(s.decision_source, DecisionSource::kLoaded);
  const std::string text = RenderPrometheusStats();
  EXPECT_NE(text.find("arenarpc_grpc_auto_decision{method=\"" + method +
                      "\",mode=\"reuse\",source=\"loaded\"} 1"),
            std::string::npos)
      << text;
  unlink(path.c_str());
}

}  // namespace
}  // namespace arenarpc
