// google.logging.v2.LoggingServiceV2/WriteLogEntries (npm google-proto-files
// 5.0.3): string-heavy log entries with a payload oneof and label maps.
//
// Numbers: the Python client's background transport sends batches of up to
// 10 entries (_DEFAULT_MAX_BATCH_SIZE); the Go client bundles for 1 s, up to
// 1000 entries (DefaultEntryCountThreshold) or 8 MiB; the GKE logging agent
// flushes its buffer in chunks of a few hundred entries. Entries are
// typically 0.3-2 KB (a log line or a JSON object plus resource, labels and
// trace fields); the API caps an entry at 256 KB and a request at 10 MB.
#include <google/protobuf/struct.pb.h>

#include <array>
#include <string>
#include <string_view>

#include "corpus_internal.h"
#include "google/logging/v2/logging.pb.h"

namespace arenarpc::corpus::internal {
namespace {

using ::google::logging::v2::LogEntry;
using ::google::logging::v2::WriteLogEntriesRequest;
using ::google::logging::v2::WriteLogEntriesResponse;
using ::google::protobuf::Struct;
using ::google::protobuf::Value;

enum Kind { kClientBatch, kBundle, kCountThreshold };

constexpr std::array<std::string_view, 4> kContainers = {
    "checkout", "cart", "payment", "istio-proxy"};

// The k8s_container monitored resource every GKE log entry carries.
void FillResource(Rng& rng, google::api::MonitoredResource* r) {
  r->set_type("k8s_container");
  auto* labels = r->mutable_labels();
  const std::string container(rng.Pick(kContainers));
  (*labels)["project_id"] = "shop-prod";
  (*labels)["location"] = "europe-west1";
  (*labels)["cluster_name"] = "prod-cluster-1";
  (*labels)["namespace_name"] = "shop-prod";
  (*labels)["pod_name"] = Cat(container, "-", rng.Hex(10), "-", rng.Hex(5));
  (*labels)["container_name"] = container;
}

// A structured (JSON) log line as logging libraries emit it: message,
// logger, thread, a few context fields and sometimes a nested object.
void FillJson(Rng& rng, Struct* s) {
  auto* f = s->mutable_fields();
  (*f)["message"].set_string_value(
      rng.Words(static_cast<int>(rng.LogUniform(40, 400))));
  (*f)["logger"].set_string_value("com.shop.checkout.OrderService");
  (*f)["thread"].set_string_value(
      Cat("http-nio-8080-exec-", rng.Uniform(1, 200)));
  (*f)["orderId"].set_string_value(rng.Digits(10));
  (*f)["durationMs"].set_number_value(
      static_cast<double>(rng.LogUniform(1, 5000)));
  (*f)["retry"].set_bool_value(rng.Chance(0.05));
  if (rng.Chance(0.4)) {
    Struct* context = (*f)["context"].mutable_struct_value();
    auto* c = context->mutable_fields();
    (*c)["userId"].set_string_value(rng.Digits(9));
    (*c)["cartItems"].set_number_value(static_cast<double>(rng.Uniform(1, 30)));
    (*c)["region"].set_string_value("eu");
    auto* tags = (*c)["tags"].mutable_list_value();
    for (int i = 0, n = static_cast<int>(rng.Uniform(1, 4)); i < n; ++i) {
      tags->add_values()->set_string_value(Cat("tag-", rng.Uniform(1, 50)));
    }
  }
}

void FillEntry(Rng& rng, bool large, LogEntry* e) {
  e->set_log_name(rng.Chance(0.8) ? "projects/shop-prod/logs/stdout"
                                  : "projects/shop-prod/logs/stderr");
  e->mutable_timestamp()->set_seconds(1700000000 + rng.Uniform(0, 1000));
  e->mutable_timestamp()->set_nanos(
      static_cast<int32_t>(rng.Uniform(0, 999'999'999)));
  const int sev = static_cast<int>(rng.Uniform(0, 99));
  e->set_severity(sev < 10   ? google::logging::type::DEBUG
                  : sev < 80 ? google::logging::type::INFO
                  : sev < 95 ? google::logging::type::WARNING
                             : google::logging::type::ERROR);
  e->set_insert_id(rng.Hex(16));
  const int payload = static_cast<int>(rng.Uniform(0, 99));
  if (large) {
    // A dumped request/response or a long stack trace, up to the 256 KB cap.
    e->set_text_payload(
        rng.Words(static_cast<int>(rng.LogUniform(20'000, 250'000))));
  } else if (payload < 40) {
    e->set_text_payload(rng.Words(static_cast<int>(rng.LogUniform(60, 300))));
  } else if (payload < 90) {
    FillJson(rng, e->mutable_json_payload());
  } else {
    // Access log (load balancer / proxy): HttpRequest plus a short line.
    e->set_text_payload("request completed");
    auto* http = e->mutable_http_request();
    http->set_request_method(rng.Chance(0.7) ? "GET" : "POST");
    http->set_request_url(Cat("https://shop.example.com/api/v1/orders/",
                              rng.Digits(8), "?expand=items&currency=EUR"));
    http->set_request_size(rng.LogUniform(200, 20'000));
    http->set_status(rng.Chance(0.95) ? 200 : 502);
    http->set_response_size(rng.LogUniform(100, 500'000));
    http->set_user_agent(
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like "
        "Gecko) Chrome/120.0 Safari/537.36");
    http->set_remote_ip(Cat(rng.Uniform(1, 223), ".", rng.Uniform(0, 255), ".",
                            rng.Uniform(0, 255), ".", rng.Uniform(1, 254)));
    http->set_server_ip("10.12.0.7");
    http->mutable_latency()->set_nanos(
        static_cast<int32_t>(rng.LogUniform(100'000, 999'999'999)));
    http->set_protocol("HTTP/1.1");
  }
  auto* labels = e->mutable_labels();
  (*labels)["k8s-pod/app"] = std::string(rng.Pick(kContainers));
  (*labels)["k8s-pod/pod-template-hash"] = rng.Hex(10);
  if (rng.Chance(0.5)) {
    (*labels)["compute.googleapis.com/resource_name"] =
        Cat("gke-prod-pool-", rng.Hex(8));
  }
  if (rng.Chance(0.6)) {
    e->set_trace(Cat("projects/shop-prod/traces/", rng.Hex(32)));
    e->set_span_id(rng.Hex(16));
    e->set_trace_sampled(rng.Chance(0.1));
  }
  if (rng.Chance(0.3)) {
    auto* loc = e->mutable_source_location();
    loc->set_file("src/main/java/com/shop/checkout/OrderService.java");
    loc->set_line(rng.Uniform(10, 900));
    loc->set_function("com.shop.checkout.OrderService.placeOrder");
  }
}

void Make(int kind, Rng& rng, google::protobuf::Message* m) {
  auto* request = static_cast<WriteLogEntriesRequest*>(m);
  FillResource(rng, request->mutable_resource());
  (*request->mutable_labels())["logging.googleapis.com/agent"] = "fluent-bit";
  request->set_partial_success(true);
  int n = 0;
  switch (kind) {
    case kClientBatch:
      n = static_cast<int>(rng.Uniform(1, 10));
      break;
    case kBundle:
      n = static_cast<int>(rng.LogUniform(10, 500));
      break;
    default:
      n = 1000;
      break;
  }
  for (int i = 0; i < n; ++i) {
    // In the rare full bundles, a few entries carry dumps of tens of KB.
    FillEntry(rng, kind == kCountThreshold && i % 200 == 7,
              request->add_entries());
  }
}

std::vector<std::string> Generate(uint64_t seed, int count) {
  return GenerateMix(seed, count,
                     {{kClientBatch, 60}, {kBundle, 39}, {kCountThreshold, 1}},
                     &Make, WriteLogEntriesRequest::default_instance());
}

uint64_t WalkValue(const Value& v);

uint64_t WalkStruct(const Struct& s) {
  uint64_t sum = s.fields_size();  // order-independent (map)
  for (const auto& [key, value] : s.fields()) {
    sum += Mix(HashStr(key), WalkValue(value));
  }
  return sum;
}

uint64_t WalkValue(const Value& v) {
  switch (v.kind_case()) {
    case Value::kStringValue:
      return v.string_value().size() <= 64 ? HashStr(v.string_value())
                                           : Touch(v.string_value());
    case Value::kNumberValue:
      return static_cast<uint64_t>(v.number_value());
    case Value::kBoolValue:
      return v.bool_value() ? 3 : 5;
    case Value::kStructValue:
      return WalkStruct(v.struct_value());
    case Value::kListValue: {
      uint64_t h = 11;
      for (const Value& e : v.list_value().values()) h = Mix(h, WalkValue(e));
      return h;
    }
    default:
      return 1;
  }
}

// What the ingestion front end reads to route and index an entry: log
// name, resource, severity, time, labels, trace, and the payload.
uint64_t Walk(const google::protobuf::Message& m) {
  const auto& request = static_cast<const WriteLogEntriesRequest&>(m);
  uint64_t h =
      Mix(HashStr(request.log_name()), HashStr(request.resource().type()));
  h = Mix(h, WalkStringMap(request.resource().labels()));
  h = Mix(h, WalkStringMap(request.labels()));
  for (const LogEntry& e : request.entries()) {
    h = Mix(h, HashStr(e.log_name()));
    h = Mix(h, static_cast<uint64_t>(e.timestamp().seconds()) ^ e.severity());
    switch (e.payload_case()) {
      case LogEntry::kTextPayload:
        h = Mix(h, Touch(e.text_payload()));
        break;
      case LogEntry::kJsonPayload:
        h = Mix(h, WalkStruct(e.json_payload()));
        break;
      case LogEntry::kProtoPayload:
        h = Mix(h, HashStr(e.proto_payload().type_url()) ^
                       Touch(e.proto_payload().value()));
        break;
      default:
        break;
    }
    h = Mix(h, WalkStringMap(e.labels()));
    if (e.has_http_request()) {
      h = Mix(h, HashStr(e.http_request().request_method()) ^
                     e.http_request().status());
      h = Mix(h, Touch(e.http_request().request_url()));
    }
    h = Mix(h, HashStr(e.trace()) ^ HashStr(e.span_id()));
    h = Mix(h, HashStr(e.insert_id()));
  }
  return h;
}

void Respond(const google::protobuf::Message& /*request*/,
             google::protobuf::Message* /*response*/) {
  // Success: WriteLogEntriesResponse has no fields.
}

}  // namespace

Service LoggingService() {
  return Service{
      .name = "logging_write",
      .method = "/google.logging.v2.LoggingServiceV2/WriteLogEntries",
      .proto = "google/logging/v2/logging.proto",
      .request = WriteLogEntriesRequest::descriptor(),
      .response = WriteLogEntriesResponse::descriptor(),
      .shape =
          "string-heavy: payload oneof (text / Struct JSON / HttpRequest), "
          "map<string,string> labels, Timestamp, nested Struct maps",
      .sizes_from =
          "Python client batches of 1-10 (60%), Go/agent bundles of "
          "10-500 (39%), 1% full 1000-entry bundles with 20-250 KB entries",
      .generate = &Generate,
      .walk = &Walk,
      .respond = &Respond};
}

}  // namespace arenarpc::corpus::internal
