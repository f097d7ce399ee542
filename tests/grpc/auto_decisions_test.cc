// kAuto's decisions file (AutoOptions::decisions_path,
// arenarpc/grpc/auto_decisions.h): the format's round trip, bad and stale
// files, a changed schema, a file the previous version wrote, loading into
// installed methods, saving on settle (a background task), and a
// server that starts settled. Own binary: the methods, the file store and
// the background thread are process-wide. The background thread is never
// started: the tests run its work themselves (RunBackgroundOnce).
#include "arenarpc/grpc/auto_decisions.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/stubs/common.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "arenarpc/grpc/install.h"
#include "arenarpc/grpc/internal/auto_call.h"
#include "arenarpc/grpc/stats.h"
#include "echo_service.h"
#include "grpc/grpc_test_util.h"
#include "src/grpc/decision_file.h"
#include "src/internal/background.h"

namespace arenarpc {
namespace {

using echo::EchoRequest;
using echo::EchoResponse;
using internal::AutoMethod;
using internal::CallKind;
using internal::CallTiming;
using internal::DecisionEntry;
using testing::WaitFor;

// The background thread's body is kept, never run: decision saves happen
// when a test runs the thread's work (internal::RunBackgroundOnce).
void KeepTheBody(std::function<void()>) {}
const bool kept_the_body = [] {
  internal::SetBackgroundThreadStarterForTesting(&KeepTheBody);
  return true;
}();

AutoMethodStats StatsOf(const std::string& method) {
  for (const AutoMethodStats& s : GetAutoMethodStats()) {
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
  e.protobuf = GOOGLE_PROTOBUF_VERSION;
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

// Never destroyed (an AutoMethod outlives every call): kept here.
AutoMethod* NewAutoMethod(const std::string& name,
                          const AutoOptions& automatic = {}) {
  static auto* const methods = new std::vector<AutoMethod*>();
  methods->push_back(new AutoMethod(name, automatic, EchoRequest::descriptor(),
                                    EchoResponse::descriptor(), nullptr));
  return methods->back();
}

// Only entries that match an installed kAuto method start it: another
// protobuf version, other message types, a changed schema, an unknown
// method are skipped (one line each). Seen red with LoadAutoDecisions'
// Mismatch() taken as always empty (B, C, D started too).
TEST(AutoDecisionsLoadTest, LoadsOnlyMatchingEntries) {
  ASSERT_TRUE(kept_the_body);
  AutoMethod* a = NewAutoMethod("/t.L/A");
  NewAutoMethod("/t.L/B");
  NewAutoMethod("/t.L/C");
  NewAutoMethod("/t.L/D");
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
  const AutoMethodStats s = StatsOf("/t.L/A");
  EXPECT_TRUE(s.settled);
  EXPECT_EQ(s.mode, AllocationMode::kReuse);
  EXPECT_EQ(s.decision_source, DecisionSource::kLoaded);
  // The loaded costs are the method's until it decides again.
  EXPECT_DOUBLE_EQ(s.cost_us[1], 1900.5);
  EXPECT_DOUBLE_EQ(s.cost_us[2], 1302.1);
  for (const char* m : {"/t.L/B", "/t.L/C", "/t.L/D"}) {
    EXPECT_FALSE(StatsOf(m).settled) << m;
    EXPECT_EQ(StatsOf(m).decision_source, DecisionSource::kNone) << m;
  }
  // Its calls run in reuse, untimed (no trial), in every API.
  for (CallKind kind : {CallKind::kSync, CallKind::kCallback}) {
    for (int i = 0; i < 10; ++i) {
      CallTiming t;
      EXPECT_EQ(a->ModeForCall(kind, 1000, &t), AllocationMode::kReuse);
      EXPECT_EQ(t.method, nullptr);
    }
  }
  EXPECT_EQ(StatsOf("/t.L/A").timed_calls, 0u);
  // Loading again changes nothing: A decided already.
  EXPECT_EQ(*LoadAutoDecisions(path), 0);
  unlink(path.c_str());
}

// A file the previous version wrote (docs/raw/auto_prior's data.tar.xz,
// sync_metrics_logs/decisions_otlp_logs.json), verbatim: its layout
// (protobuf's JSON printer, fields in its order) must still read.
constexpr const char* kKeptFile = R"({
 "decisions": [
  {
   "saved_unix_s": 1795769611,
   "calls": 64,
   "schema": "e56c6fbab2548260",
   "protobuf": 3021012,
   "source": "prior",
   "request_type": "opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest",
   "response_type": "opentelemetry.proto.collector.logs.v1.ExportLogsServiceResponse",
   "cost_us": {
    "reuse": 324.6,
    "arena": 336.1,
    "heap": 0
   },
   "method": "opentelemetry.proto.collector.logs.v1.LogsService/Export",
   "mode": "reuse"
  }
 ],
 "format": "arenarpc auto decisions",
 "version": 1
}
)";

// Seen red with ReadEntry's `source == "prior"` test made false (the kept
// file's prior decision read as learned).
TEST(AutoDecisionsFileTest, AFileThePreviousVersionWroteStillReads) {
  std::vector<std::string> skipped;
  const auto out = internal::ParseDecisions(kKeptFile, &skipped);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(skipped.empty());
  ASSERT_EQ(out->size(), 1u);
  const DecisionEntry& e = (*out)[0];
  EXPECT_EQ(e.method,
            "opentelemetry.proto.collector.logs.v1.LogsService/Export");
  EXPECT_EQ(e.request_type,
            "opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest");
  EXPECT_EQ(e.response_type,
            "opentelemetry.proto.collector.logs.v1.ExportLogsServiceResponse");
  EXPECT_EQ(e.schema, "e56c6fbab2548260");
  EXPECT_EQ(e.protobuf, 3021012);
  EXPECT_EQ(e.mode, AllocationMode::kReuse);
  EXPECT_EQ(e.source, DecisionSource::kPrior);
  EXPECT_DOUBLE_EQ(e.cost_us[0], 0);
  EXPECT_DOUBLE_EQ(e.cost_us[1], 336.1);
  EXPECT_DOUBLE_EQ(e.cost_us[2], 324.6);
  EXPECT_EQ(e.calls, 64u);
  EXPECT_EQ(e.saved_unix_s, 1795769611);

  // The same file for an installed method of this process (its identity
  // put in place of the OTLP one, the layout kept): it starts settled.
  std::string text = kKeptFile;
  const DecisionEntry id = EchoId("/t.Kept/Export");
  auto replace = [&](const std::string& from, const std::string& to) {
    const size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
  };
  replace("opentelemetry.proto.collector.logs.v1.LogsService/Export",
          id.method);
  replace("opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest",
          id.request_type);
  replace("opentelemetry.proto.collector.logs.v1.ExportLogsServiceResponse",
          id.response_type);
  replace("e56c6fbab2548260", id.schema);
  replace("3021012", std::to_string(id.protobuf));
  NewAutoMethod(id.method);
  const std::string path = TempPath("kept");
  WriteText(path, text);
  const absl::StatusOr<int> started = LoadAutoDecisions(path);
  ASSERT_TRUE(started.ok()) << started.status();
  EXPECT_EQ(*started, 1);
  const AutoMethodStats s = StatsOf(id.method);
  EXPECT_TRUE(s.settled);
  EXPECT_EQ(s.mode, AllocationMode::kReuse);
  EXPECT_EQ(s.decision_source, DecisionSource::kLoaded);
  unlink(path.c_str());
}

// Trials of `m` until it settles (at most `max_calls` calls), each of
// `bytes` on the wire and costing cost_ns[mode] of CPU: the learner sees
// these costs, not the test's own CPU.
void LearnUntilSettled(AutoMethod* m, const std::string& name, double bytes,
                       const std::array<double, kNumAllocationModes>& cost_ns,
                       int max_calls = 600) {
  for (int call = 0; call < max_calls && !StatsOf(name).settled; ++call) {
    CallTiming t;
    const AllocationMode mode = m->ModeForCall(CallKind::kSync, bytes, &t);
    if (t.method != nullptr) m->Observe(t, cost_ns[static_cast<int>(mode)]);
  }
}

// Saved atomically (no temporary left), the decisions of this process
// and the entries of other methods from the file loaded; a decision
// settled with decisions_path set is saved by a background task, off the
// call path. Seen red with SaveAutoDecisions keeping no entry of another
// method (`installed.count(e.method) == 0` made false), and with
// DecisionSettled() not posting the save (nothing saved).
TEST(AutoDecisionsSaveTest, SavesOnSettleAndKeepsOtherMethods) {
  ASSERT_TRUE(kept_the_body);
  const std::string dir = TempPath("dir");
  mkdir(dir.c_str(), 0755);
  const std::string path = dir + "/decisions.json";
  // Another replica's file: a method this process does not install.
  const std::string other =
      Format({EchoDecision("/t.Other/M", AllocationMode::kArena)});
  WriteText(path, other);
  AutoOptions automatic;
  automatic.max_cpu_share = 1.0;  // every call may be a trial
  automatic.decisions_path = path;
  AutoMethod* m = NewAutoMethod("/t.S/Learns", automatic);
  EXPECT_FALSE(StatsOf("/t.S/Learns").settled);  // no entry: it learns
  internal::RunBackgroundOnce();
  EXPECT_EQ(ReadText(path), other) << "saved before any decision";
  // Calls of 1000 bytes: heap 60 us, arena 40 us, reuse 20 us of CPU.
  LearnUntilSettled(m, "/t.S/Learns", 1000, {6e4, 4e4, 2e4});
  ASSERT_TRUE(StatsOf("/t.S/Learns").settled);
  // Not on the call path: nothing written until the background thread
  // runs the save.
  EXPECT_EQ(ReadText(path), other);
  internal::RunBackgroundOnce();
  const auto saved = internal::ParseDecisions(ReadText(path), nullptr);
  ASSERT_TRUE(saved.ok()) << saved.status();
  bool learned = false;
  bool kept = false;
  for (const DecisionEntry& e : *saved) {
    if (e.method == "/t.S/Learns") {
      learned = true;
      EXPECT_EQ(e.mode, AllocationMode::kReuse);
      EXPECT_EQ(e.source, DecisionSource::kLearned);  // small calls: no prior
      EXPECT_EQ(e.schema, EchoId("x").schema);
      EXPECT_GT(e.calls, 0u);
      EXPECT_GT(e.cost_us[2], 0);
      EXPECT_GT(e.cost_us[0], e.cost_us[2]);
    }
    if (e.method == "/t.Other/M") kept = true;
  }
  EXPECT_TRUE(learned);
  EXPECT_TRUE(kept);
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
// where the decision came from; saved again, the decision keeps what was
// loaded. Seen red with the AutoMethod constructor's Load() call removed
// (the first calls were trials), and without a loaded decision's costs
// and calls kept (saved as 0).
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
  const AutoMethodStats s = StatsOf(method);
  EXPECT_EQ(s.timed_calls, 0u);
  EXPECT_EQ(s.lost_calls + s.failed_calls + s.warming_calls, 0u);
  EXPECT_TRUE(s.settled);
  EXPECT_EQ(s.mode, AllocationMode::kReuse);
  EXPECT_EQ(s.decision_source, DecisionSource::kLoaded);
  const std::string text = RenderPrometheusStats();
  EXPECT_NE(text.find("arenarpc_grpc_auto_decision{method=\"" + method +
                      "\",mode=\"reuse\",source=\"loaded\"} 1"),
            std::string::npos)
      << text;
  // Saved (explicitly: save_decisions is off) as it was loaded.
  const std::string again = TempPath("server_again");
  ASSERT_TRUE(SaveAutoDecisions(again).ok());
  const auto saved = internal::ParseDecisions(ReadText(again), nullptr);
  ASSERT_TRUE(saved.ok()) << saved.status();
  bool found = false;
  for (const DecisionEntry& e : *saved) {
    if (e.method != method) continue;
    found = true;
    EXPECT_EQ(e.mode, AllocationMode::kReuse);
    EXPECT_EQ(e.source, DecisionSource::kLearned);
    EXPECT_DOUBLE_EQ(e.cost_us[1], 1900.5);
    EXPECT_DOUBLE_EQ(e.cost_us[2], 1302.1);
    EXPECT_EQ(e.calls, 24u);
  }
  EXPECT_TRUE(found);
  unlink(path.c_str());
  unlink(again.c_str());
}

}  // namespace
}  // namespace arenarpc
