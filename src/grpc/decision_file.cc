#include "src/grpc/decision_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "arenarpc/grpc/auto_decisions.h"
#include "arenarpc/internal/mutex.h"
#include "google/protobuf/descriptor.pb.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/stubs/common.h"
#include "google/protobuf/util/json_util.h"
#include "src/internal/background.h"

namespace arenarpc::internal {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::ListValue;
using google::protobuf::Struct;
using google::protobuf::Value;

constexpr const char* kFormat = "arenarpc auto decisions";

void CollectTypes(const Descriptor* d,
                  std::map<std::string, const Descriptor*>* seen) {
  if (d == nullptr || !seen->emplace(std::string(d->full_name()), d).second) {
    return;
  }
  for (int i = 0; i < d->field_count(); ++i) {
    CollectTypes(d->field(i)->message_type(), seen);
  }
  for (int i = 0; i < d->nested_type_count(); ++i) {
    CollectTypes(d->nested_type(i), seen);
  }
}

uint64_t Fnv1a(uint64_t h, std::string_view bytes) {
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

// Struct accessors: the field if present with that kind.
const Value* Field(const Struct& s, const char* name, Value::KindCase kind) {
  const auto it = s.fields().find(name);
  if (it == s.fields().end() || it->second.kind_case() != kind) return nullptr;
  return &it->second;
}

std::optional<std::string> String(const Struct& s, const char* name) {
  const Value* v = Field(s, name, Value::kStringValue);
  if (v == nullptr || v->string_value().empty()) return std::nullopt;
  return v->string_value();
}

// A finite number >= 0.
std::optional<double> Number(const Struct& s, const char* name) {
  const Value* v = Field(s, name, Value::kNumberValue);
  if (v == nullptr || !std::isfinite(v->number_value()) ||
      v->number_value() < 0) {
    return std::nullopt;
  }
  return v->number_value();
}

// Reads entry `i`; an empty string or the reason it cannot be read.
std::string ReadEntry(const Value& v, DecisionEntry* e) {
  if (v.kind_case() != Value::kStructValue) return "not an object";
  const Struct& s = v.struct_value();
  const auto method = String(s, "method");
  const auto request = String(s, "request_type");
  const auto response = String(s, "response_type");
  const auto schema = String(s, "schema");
  const auto mode = String(s, "mode");
  const auto protobuf = Number(s, "protobuf");
  if (!method || !request || !response || !schema || !mode || !protobuf) {
    return "a field is missing or mistyped (method, request_type, "
           "response_type, schema, mode, protobuf)";
  }
  e->method = *method;
  e->request_type = *request;
  e->response_type = *response;
  e->schema = *schema;
  e->protobuf = static_cast<int64_t>(*protobuf);
  const absl::StatusOr<AllocationMode> m = ParseAllocationMode(*mode);
  if (!m.ok() || *m == AllocationMode::kAuto) {
    return absl::StrCat("mode \"", *mode, "\" is not heap, arena or reuse");
  }
  e->mode = *m;
  const auto source = String(s, "source");
  e->source =
      source == "prior" ? DecisionSource::kPrior : DecisionSource::kLearned;
  if (const Value* c = Field(s, "cost_us", Value::kStructValue)) {
    for (int i = 0; i < kNumAllocationModes; ++i) {
      const std::string name(
          AllocationModeName(static_cast<AllocationMode>(i)));
      e->cost_us[i] = Number(c->struct_value(), name.c_str()).value_or(0);
    }
  }
  e->calls = static_cast<uint64_t>(Number(s, "calls").value_or(0));
  e->saved_unix_s = Number(s, "saved_unix_s").value_or(0);
  return "";
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot open ", path));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot read ", path));
  return text.str();
}

// A file and its entries, read once; what explicit loads and saves keep.
struct LoadedFile {
  absl::Status status;
  std::vector<DecisionEntry> entries;
};

class Store {
 public:
  static Store& Get() {
    static Store* const store = new Store();  // outlives every call
    return *store;
  }

  // The file at `path`, read and parsed once (logged once if unusable).
  const LoadedFile& Load(const std::string& path)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    auto [it, fresh] = files_.try_emplace(path);
    if (fresh) it->second = Read(path, /*log=*/true);
    return it->second;
  }

  static LoadedFile Read(const std::string& path, bool log) {
    LoadedFile f;
    absl::StatusOr<std::string> text = ReadFile(path);
    std::vector<std::string> skipped;
    absl::StatusOr<std::vector<DecisionEntry>> entries =
        text.ok() ? ParseDecisions(*text, &skipped)
                  : absl::StatusOr<std::vector<DecisionEntry>>(text.status());
    if (!entries.ok()) {
      f.status = entries.status();
      if (log) {
        std::fprintf(stderr,
                     "arenarpc: auto decisions file %s ignored (kAuto learns "
                     "as without it): %s\n",
                     path.c_str(), f.status.ToString().c_str());
      }
      return f;
    }
    for (const std::string& why : skipped) {
      std::fprintf(stderr, "arenarpc: auto decisions file %s: %s ignored\n",
                   path.c_str(), why.c_str());
    }
    f.entries = std::move(*entries);
    return f;
  }

  Mutex mu;
  std::string save_path ABSL_GUARDED_BY(mu);
  std::map<std::string, LoadedFile> files_ ABSL_GUARDED_BY(mu);
  bool dirty ABSL_GUARDED_BY(mu) = false;
  bool saving ABSL_GUARDED_BY(mu) = false;  // the background tick is added
  double last_save_s ABSL_GUARDED_BY(mu) = -1;
};

// The background thread's tick: saves at most once a second (decisions
// come in bursts at start-up).
void SaveTick() {
  Store& s = Store::Get();
  std::string path;
  {
    MutexLock lock(&s.mu);
    const double now = std::chrono::duration<double>(
                           std::chrono::steady_clock::now().time_since_epoch())
                           .count();
    if (!s.dirty || now - s.last_save_s < 1) return;
    s.dirty = false;
    s.last_save_s = now;
    path = s.save_path;
  }
  const absl::Status st = SaveAutoDecisions(path);
  if (!st.ok()) {
    std::fprintf(stderr, "arenarpc: saving auto decisions to %s: %s\n",
                 path.c_str(), st.ToString().c_str());
  }
}

}  // namespace

int64_t ProtobufVersion() { return GOOGLE_PROTOBUF_VERSION; }

std::string SchemaFingerprint(const Descriptor* request,
                              const Descriptor* response) {
  std::map<std::string, const Descriptor*> types;
  CollectTypes(request, &types);
  CollectTypes(response, &types);
  uint64_t h = 0xcbf29ce484222325ull;
  // Which is which matters too: a request and a response swapped differ.
  h = Fnv1a(h, request != nullptr ? request->full_name() : "");
  h = Fnv1a(h, response != nullptr ? response->full_name() : "");
  for (const auto& [name, d] : types) {
    google::protobuf::DescriptorProto proto;
    d->CopyTo(&proto);
    proto.clear_nested_type();  // each nested type is hashed on its own
    std::string bytes;
    google::protobuf::io::StringOutputStream out(&bytes);
    google::protobuf::io::CodedOutputStream coded(&out);
    coded.SetSerializationDeterministic(true);
    proto.SerializeToCodedStream(&coded);
    coded.Trim();
    h = Fnv1a(h, name);
    h = Fnv1a(h, bytes);
  }
  return absl::StrFormat("%016x", h);
}

absl::StatusOr<std::vector<DecisionEntry>> ParseDecisions(
    std::string_view json, std::vector<std::string>* skipped) {
  Struct file;
  const auto parsed =
      google::protobuf::util::JsonStringToMessage(std::string(json), &file);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("not JSON: ", parsed.ToString()));
  }
  if (String(file, "format") != kFormat) {
    return absl::InvalidArgumentError(
        absl::StrCat("no \"format\": \"", kFormat, "\""));
  }
  const std::optional<double> version = Number(file, "version");
  if (!version || *version < 1 || *version != std::floor(*version)) {
    return absl::InvalidArgumentError("no valid \"version\"");
  }
  if (*version > kDecisionFileVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("file-format version ", *version, " is newer than ",
                     kDecisionFileVersion, ", the newest this build reads"));
  }
  const Value* list = Field(file, "decisions", Value::kListValue);
  if (list == nullptr) {
    return absl::InvalidArgumentError("no \"decisions\" list");
  }
  std::vector<DecisionEntry> out;
  int i = 0;
  for (const Value& v : list->list_value().values()) {
    DecisionEntry e;
    const std::string why = ReadEntry(v, &e);
    if (why.empty()) {
      out.push_back(std::move(e));
    } else if (skipped != nullptr) {
      skipped->push_back(absl::StrCat("entry ", i, ": ", why));
    }
    ++i;
  }
  return out;
}

absl::StatusOr<std::string> FormatDecisions(
    const std::vector<DecisionEntry>& entries) {
  Struct file;
  auto& f = *file.mutable_fields();
  f["format"].set_string_value(kFormat);
  f["version"].set_number_value(kDecisionFileVersion);
  ListValue* list = f["decisions"].mutable_list_value();
  for (const DecisionEntry& e : entries) {
    auto& d = *list->add_values()->mutable_struct_value()->mutable_fields();
    d["method"].set_string_value(e.method);
    d["request_type"].set_string_value(e.request_type);
    d["response_type"].set_string_value(e.response_type);
    d["schema"].set_string_value(e.schema);
    d["protobuf"].set_number_value(static_cast<double>(e.protobuf));
    d["mode"].set_string_value(std::string(AllocationModeName(e.mode)));
    d["source"].set_string_value(DecisionSourceName(e.source));
    auto& cost = *d["cost_us"].mutable_struct_value()->mutable_fields();
    for (int i = 0; i < kNumAllocationModes; ++i) {
      const std::string mode(
          AllocationModeName(static_cast<AllocationMode>(i)));
      // JSON has no such number: protobuf 3.21 writes "Infinity", which
      // ParseDecisions reads back as no cost.
      if (!std::isfinite(e.cost_us[i])) {
        return absl::InvalidArgumentError(
            absl::StrCat("decision for ", e.method, ": the ", mode,
                         " cost is not a finite number"));
      }
      cost[mode].set_number_value(std::round(e.cost_us[i] * 10) / 10);
    }
    d["calls"].set_number_value(static_cast<double>(e.calls));
    d["saved_unix_s"].set_number_value(std::round(e.saved_unix_s));
  }
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  const auto printed =
      google::protobuf::util::MessageToJsonString(file, &out, options);
  if (!printed.ok()) {
    return absl::InternalError(
        absl::StrCat("cannot format the decisions: ", printed.ToString()));
  }
  return out;
}

std::string Mismatch(const DecisionEntry& entry, const DecisionEntry& id) {
  if (entry.protobuf != id.protobuf) {
    return absl::StrCat("written with protobuf ", entry.protobuf, ", not ",
                        id.protobuf);
  }
  if (entry.request_type != id.request_type ||
      entry.response_type != id.response_type) {
    return absl::StrCat("message types ", entry.request_type, " -> ",
                        entry.response_type, ", now ", id.request_type, " -> ",
                        id.response_type);
  }
  if (entry.schema != id.schema) {
    return absl::StrCat("schema ", entry.schema, ", now ", id.schema,
                        " (the messages changed)");
  }
  return "";
}

std::optional<DecisionEntry> DecisionAtInstall(const std::string& path,
                                               bool save,
                                               const DecisionEntry& id) {
  Store& s = Store::Get();
  MutexLock lock(&s.mu);
  if (save && s.save_path.empty()) s.save_path = path;
  const LoadedFile& f = s.Load(path);
  for (const DecisionEntry& e : f.entries) {
    if (e.method != id.method) continue;
    const std::string why = Mismatch(e, id);
    if (why.empty()) return e;
    std::fprintf(stderr,
                 "arenarpc: auto decisions file %s: %s ignored (kAuto learns "
                 "it): %s\n",
                 path.c_str(), id.method.c_str(), why.c_str());
    return std::nullopt;
  }
  return std::nullopt;
}

void DecisionSettled() {
  Store& s = Store::Get();
  MutexLock lock(&s.mu);
  if (s.save_path.empty()) return;
  s.dirty = true;
  if (!s.saving) {
    s.saving = true;
    AddBackgroundTick(SaveTick);
  }
}

DecisionEntry IdentityOf(const std::string& method, const Descriptor* request,
                         const Descriptor* response) {
  DecisionEntry id;
  id.method = method;
  id.request_type = std::string(request->full_name());
  id.response_type = std::string(response->full_name());
  id.schema = SchemaFingerprint(request, response);
  id.protobuf = ProtobufVersion();
  return id;
}

}  // namespace arenarpc::internal

namespace arenarpc {

absl::Status SaveAutoDecisions(const std::string& path) {
  using internal::DecisionEntry;
  std::vector<DecisionEntry> out;
  std::set<std::string> installed;
  const double now = std::chrono::duration<double>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  for (DecisionEntry& e : internal::AutoMethodDecisions()) {
    installed.insert(e.method);
    if (e.source == DecisionSource::kNone) continue;
    // A loaded decision is saved as it was loaded (costs, calls), as learned.
    if (e.source == DecisionSource::kLoaded)
      e.source = DecisionSource::kLearned;
    e.saved_unix_s = now;
    out.push_back(std::move(e));
  }
  {
    internal::Store& s = internal::Store::Get();
    internal::MutexLock lock(&s.mu);
    const auto it = s.files_.find(path);
    if (it != s.files_.end()) {
      for (const DecisionEntry& e : it->second.entries) {
        if (installed.count(e.method) == 0) out.push_back(e);
      }
    }
  }
  const absl::StatusOr<std::string> formatted = internal::FormatDecisions(out);
  if (!formatted.ok()) return formatted.status();
  const std::string& text = *formatted;
  // The temporary file next to the target (rename() stays on one file
  // system), unique per process and write.
  static std::atomic<uint64_t> serial{0};
  const std::string tmp =
      absl::StrCat(path, ".tmp.", getpid(), ".", serial.fetch_add(1));
  std::FILE* f = std::fopen(tmp.c_str(), "we");  // e: close on exec
  if (f == nullptr) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot create ", tmp));
  }
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size() &&
            std::fflush(f) == 0 && fsync(fileno(f)) == 0;
  int err = ok ? 0 : errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    unlink(tmp.c_str());
    return absl::ErrnoToStatus(err, absl::StrCat("cannot write ", tmp));
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    unlink(tmp.c_str());
    return absl::ErrnoToStatus(err, absl::StrCat("cannot rename to ", path));
  }
  return absl::OkStatus();
}

absl::StatusOr<int> LoadAutoDecisions(const std::string& path) {
  using internal::DecisionEntry;
  internal::LoadedFile f = internal::Store::Read(path, /*log=*/false);
  if (!f.status.ok()) return f.status;
  std::map<std::string, DecisionEntry> ids;
  for (DecisionEntry& e : internal::AutoMethodDecisions()) {
    ids.emplace(e.method, std::move(e));
  }
  int started = 0;
  for (const DecisionEntry& e : f.entries) {
    const auto it = ids.find(e.method);
    std::string why = it == ids.end() ? "not a kAuto method of this process"
                                      : internal::Mismatch(e, it->second);
    if (why.empty() && it->second.source != DecisionSource::kNone) {
      why = "decided already";
    }
    if (why.empty() && !internal::LoadAutoMethodDecision(e)) {
      why = "decided already";
    }
    if (why.empty()) {
      ++started;
      continue;
    }
    std::fprintf(stderr, "arenarpc: auto decisions file %s: %s ignored: %s\n",
                 path.c_str(), e.method.c_str(), why.c_str());
  }
  {
    internal::Store& s = internal::Store::Get();
    internal::MutexLock lock(&s.mu);
    s.files_[path] = std::move(f);  // kept for the next save
  }
  return started;
}

}  // namespace arenarpc
