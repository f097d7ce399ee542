#include "src/grpc/decision_file.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/descriptor.pb.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/stubs/common.h"
#include "google/protobuf/util/json_util.h"

namespace arenarpc::internal {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::Struct;
using google::protobuf::Value;
using google::protobuf::util::JsonStringToMessage;
using google::protobuf::util::MessageToJsonString;

constexpr const char* kFormat = "arenarpc auto decisions";
constexpr int kVersion = 1;  // written, and the newest read

// An entry's string fields: each one required, not empty.
constexpr std::pair<const char*, std::string DecisionEntry::*> kStrings[] = {
    {"method", &DecisionEntry::method},
    {"request_type", &DecisionEntry::request_type},
    {"response_type", &DecisionEntry::response_type},
    {"schema", &DecisionEntry::schema}};

uint64_t Fnv1a(uint64_t h, std::string_view bytes) {
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

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
  const double x = v != nullptr ? v->number_value() : -1;
  if (!std::isfinite(x) || x < 0) return std::nullopt;
  return x;
}

std::string ModeName(int mode) {
  return std::string(AllocationModeName(static_cast<AllocationMode>(mode)));
}

// Reads one entry; an empty string or the reason it cannot be read.
std::string ReadEntry(const Value& v, DecisionEntry* e) {
  if (v.kind_case() != Value::kStructValue) return "not an object";
  const Struct& s = v.struct_value();
  bool complete = true;
  for (const auto& [name, field] : kStrings) {
    e->*field = String(s, name).value_or("");
    complete = complete && !(e->*field).empty();
  }
  const auto mode = String(s, "mode");
  const auto protobuf = Number(s, "protobuf");
  if (!complete || !mode || !protobuf) {
    return "a field is missing or mistyped (method, request_type, "
           "response_type, schema, mode, protobuf)";
  }
  e->protobuf = static_cast<int64_t>(*protobuf);
  const absl::StatusOr<AllocationMode> m = ParseAllocationMode(*mode);
  if (!m.ok() || *m == AllocationMode::kAuto) {
    return absl::StrCat("mode \"", *mode, "\" is not heap, arena or reuse");
  }
  e->mode = *m;
  e->source = String(s, "source") == "prior" ? DecisionSource::kPrior
                                             : DecisionSource::kLearned;
  if (const Value* c = Field(s, "cost_us", Value::kStructValue)) {
    for (int i = 0; i < kNumAllocationModes; ++i) {
      e->cost_us[i] =
          Number(c->struct_value(), ModeName(i).c_str()).value_or(0);
    }
  }
  e->calls = static_cast<uint64_t>(Number(s, "calls").value_or(0));
  e->saved_unix_s = Number(s, "saved_unix_s").value_or(0);
  return "";
}

}  // namespace

std::string SchemaFingerprint(const Descriptor* request,
                              const Descriptor* response) {
  std::map<std::string, const Descriptor*> types;  // every one reached
  std::vector<const Descriptor*> todo = {request, response};
  while (!todo.empty()) {
    const Descriptor* d = todo.back();
    todo.pop_back();
    if (d == nullptr || !types.emplace(d->full_name(), d).second) continue;
    for (int i = 0; i < d->field_count(); ++i) {
      todo.push_back(d->field(i)->message_type());
    }
    for (int i = 0; i < d->nested_type_count(); ++i) {
      todo.push_back(d->nested_type(i));
    }
  }
  uint64_t h = 0xcbf29ce484222325ull;
  // Which is which matters too: a request and a response swapped differ.
  h = Fnv1a(h, request != nullptr ? request->full_name() : "");
  h = Fnv1a(h, response != nullptr ? response->full_name() : "");
  for (const auto& [name, d] : types) {
    google::protobuf::DescriptorProto proto;
    d->CopyTo(&proto);
    proto.clear_nested_type();  // each nested type is hashed on its own
    h = Fnv1a(Fnv1a(h, name), proto.SerializeAsString());  // no maps inside
  }
  return absl::StrFormat("%016x", h);
}

absl::StatusOr<std::vector<DecisionEntry>> ParseDecisions(
    std::string_view json, std::vector<std::string>* skipped) {
  Struct file;
  if (const auto st = JsonStringToMessage(std::string(json), &file); !st.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("not JSON: ", st.ToString()));
  }
  if (String(file, "format") != kFormat) {
    return absl::InvalidArgumentError(
        absl::StrCat("no \"format\": \"", kFormat, "\""));
  }
  const std::optional<double> version = Number(file, "version");
  if (!version || *version < 1 || *version != std::floor(*version)) {
    return absl::InvalidArgumentError("no valid \"version\"");
  }
  if (*version > kVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("file-format version ", *version, " is newer than ",
                     kVersion, ", the newest this build reads"));
  }
  const Value* list = Field(file, "decisions", Value::kListValue);
  if (list == nullptr) {
    return absl::InvalidArgumentError("no \"decisions\" list");
  }
  std::vector<DecisionEntry> out;
  for (int i = 0; i < list->list_value().values_size(); ++i) {
    DecisionEntry e;
    const std::string why = ReadEntry(list->list_value().values(i), &e);
    if (why.empty()) {
      out.push_back(std::move(e));
    } else if (skipped != nullptr) {
      skipped->push_back(absl::StrCat("entry ", i, ": ", why));
    }
  }
  return out;
}

absl::StatusOr<std::string> FormatDecisions(
    const std::vector<DecisionEntry>& entries) {
  Struct file;
  auto& f = *file.mutable_fields();
  f["format"].set_string_value(kFormat);
  f["version"].set_number_value(kVersion);
  auto* list = f["decisions"].mutable_list_value();
  for (const DecisionEntry& e : entries) {
    auto& d = *list->add_values()->mutable_struct_value()->mutable_fields();
    for (const auto& [name, field] : kStrings)
      d[name].set_string_value(e.*field);
    d["protobuf"].set_number_value(static_cast<double>(e.protobuf));
    d["mode"].set_string_value(std::string(AllocationModeName(e.mode)));
    d["source"].set_string_value(DecisionSourceName(e.source));
    auto& cost = *d["cost_us"].mutable_struct_value()->mutable_fields();
    for (int i = 0; i < kNumAllocationModes; ++i) {
      // JSON has no such number: protobuf 3.21 writes "Infinity", which
      // ParseDecisions reads back as no cost.
      if (!std::isfinite(e.cost_us[i])) {
        return absl::InvalidArgumentError(
            absl::StrCat("decision for ", e.method, ": the ", ModeName(i),
                         " cost is not a finite number"));
      }
      cost[ModeName(i)].set_number_value(std::round(e.cost_us[i] * 10) / 10);
    }
    d["calls"].set_number_value(static_cast<double>(e.calls));
    d["saved_unix_s"].set_number_value(std::round(e.saved_unix_s));
  }
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  if (const auto st = MessageToJsonString(file, &out, options); !st.ok()) {
    return absl::InternalError(
        absl::StrCat("cannot format the decisions: ", st.ToString()));
  }
  return out;
}

DecisionEntry IdentityOf(const std::string& method, const Descriptor* request,
                         const Descriptor* response) {
  return {.method = method,
          .request_type = std::string(request->full_name()),
          .response_type = std::string(response->full_name()),
          .schema = SchemaFingerprint(request, response),
          .protobuf = GOOGLE_PROTOBUF_VERSION};
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

absl::StatusOr<std::vector<DecisionEntry>> ReadDecisions(
    const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot open ", path));
  std::ostringstream text;
  text << in.rdbuf();
  std::vector<std::string> skipped;
  auto entries = ParseDecisions(text.str(), &skipped);
  for (const std::string& why : skipped) {
    std::fprintf(stderr, "arenarpc: auto decisions file %s: %s ignored\n",
                 path.c_str(), why.c_str());
  }
  return entries;
}

absl::Status WriteDecisions(const std::string& path,
                            const std::vector<DecisionEntry>& entries) {
  const absl::StatusOr<std::string> text = FormatDecisions(entries);
  if (!text.ok()) return text.status();
  // A temporary file beside it (rename() stays on one file system), unique
  // per process and write.
  static std::atomic<uint64_t> serial{0};
  const std::string tmp =
      absl::StrCat(path, ".tmp.", getpid(), ".", serial.fetch_add(1));
  std::FILE* f = std::fopen(tmp.c_str(), "we");  // e: close on exec
  if (f == nullptr) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot create ", tmp));
  }
  const bool written =
      std::fwrite(text->data(), 1, text->size(), f) == text->size() &&
      std::fflush(f) == 0 && fsync(fileno(f)) == 0;
  const int write_errno = errno;
  const bool saved = std::fclose(f) == 0 && written;  // tmp whole, on disk
  if (saved && rename(tmp.c_str(), path.c_str()) == 0) return absl::OkStatus();
  const int err = written ? errno : write_errno;
  unlink(tmp.c_str());
  return absl::ErrnoToStatus(
      err, saved ? "cannot rename to " + path : "cannot write " + tmp);
}

}  // namespace arenarpc::internal
