// OTLP/gRPC export (crate opentelemetry-proto 0.33.1): traces, metrics and
// logs, as OpenTelemetry SDKs and collectors send them.
//
// Numbers (README.md has the sources):
//  - BatchSpanProcessor: max_export_batch_size 512, scheduled delay 5 s,
//    so a busy service sends full 512-span batches and a quiet one timer
//    flushes of a few spans; BatchLogRecordProcessor: 512, 1 s.
//  - PeriodicExportingMetricReader: one request per 60 s interval with every
//    metric stream of the process.
//  - Collector batch processor: send_batch_size 8192 items, under the OTLP
//    receiver's max_recv_msg_size_mib 4 MiB: the ~1% huge requests.
//  - Attributes per span/record/point follow the semantic conventions
//    (HTTP server 12, DB client 7, internal 0-3); resource 23.
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "corpus_internal.h"
#include "opentelemetry/proto/collector/logs/v1/logs_service.pb.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb.h"

namespace arenarpc::corpus::internal {
namespace {

namespace common = ::opentelemetry::proto::common::v1;
namespace resource = ::opentelemetry::proto::resource::v1;
namespace trace = ::opentelemetry::proto::trace::v1;
namespace metrics = ::opentelemetry::proto::metrics::v1;
namespace logs = ::opentelemetry::proto::logs::v1;
namespace trace_svc = ::opentelemetry::proto::collector::trace::v1;
namespace metrics_svc = ::opentelemetry::proto::collector::metrics::v1;
namespace logs_svc = ::opentelemetry::proto::collector::logs::v1;

using Attributes = google::protobuf::RepeatedPtrField<common::KeyValue>;

// Unix ns around the end of 2023; spans are offsets from it.
constexpr uint64_t kBaseNanos = 1700000000000000000ULL;

void Str(Attributes* a, std::string_view key, std::string value) {
  common::KeyValue* kv = a->Add();
  kv->set_key(std::string(key));
  kv->mutable_value()->set_string_value(std::move(value));
}
void Int(Attributes* a, std::string_view key, int64_t value) {
  common::KeyValue* kv = a->Add();
  kv->set_key(std::string(key));
  kv->mutable_value()->set_int_value(value);
}
void Bool(Attributes* a, std::string_view key, bool value) {
  common::KeyValue* kv = a->Add();
  kv->set_key(std::string(key));
  kv->mutable_value()->set_bool_value(value);
}

constexpr std::array<std::string_view, 8> kServices = {
    "checkout", "cart", "payment", "shipping",
    "frontend", "ad",   "email",   "recommendation"};
constexpr std::array<std::string_view, 3> kLanguages = {"java", "go", "python"};

// What the SDK's default and Kubernetes resource detectors attach.
void FillResource(Rng& rng, resource::Resource* r) {
  Attributes* a = r->mutable_attributes();
  const std::string service(rng.Pick(kServices));
  const std::string language(rng.Pick(kLanguages));
  const std::string pod = Cat(service, "-", rng.Hex(10), "-", rng.Hex(5));
  Str(a, "service.name", service);
  Str(a, "service.version",
      Cat("1.", rng.Uniform(0, 40), ".", rng.Uniform(0, 9)));
  Str(a, "service.namespace", "shop");
  Str(a, "service.instance.id",
      Cat(rng.Hex(8), "-", rng.Hex(4), "-", rng.Hex(4), "-", rng.Hex(4), "-",
          rng.Hex(12)));
  Str(a, "telemetry.sdk.name", "opentelemetry");
  Str(a, "telemetry.sdk.language", language);
  Str(a, "telemetry.sdk.version", "1.38.0");
  Str(a, "deployment.environment.name", "production");
  Str(a, "host.name", pod);
  Str(a, "host.arch", "amd64");
  Str(a, "os.type", "linux");
  Str(a, "os.description", "Linux 6.1.0-18-cloud-amd64");
  Int(a, "process.pid", rng.Uniform(1, 65535));
  Str(a, "process.runtime.name",
      language == "java" ? "OpenJDK Runtime Environment" : language);
  Str(a, "process.runtime.version", "21.0.2+13-LTS");
  Str(a, "k8s.namespace.name", "shop-prod");
  Str(a, "k8s.pod.name", pod);
  Str(a, "k8s.pod.uid",
      Cat(rng.Hex(8), "-", rng.Hex(4), "-", rng.Hex(4), "-", rng.Hex(4), "-",
          rng.Hex(12)));
  Str(a, "k8s.node.name", Cat("gke-prod-pool-", rng.Hex(8), "-", rng.Hex(4)));
  Str(a, "k8s.deployment.name", service);
  Str(a, "container.id", rng.Hex(64));
  Str(a, "cloud.provider", "gcp");
  Str(a, "cloud.region", "europe-west1");
}

// ---------------------------------------------------------------- traces

enum SpanCategory {
  kHttpServer,
  kDb,
  kHttpClient,
  kInternal,
  kMessaging,
  kCache,
  kNumCategories
};

constexpr std::array<std::string_view, kNumCategories> kScopeNames = {
    "io.opentelemetry.tomcat-10.0",       "io.opentelemetry.jdbc",
    "io.opentelemetry.java-http-client",  "com.shop.checkout",
    "io.opentelemetry.kafka-clients-2.6", "io.opentelemetry.lettuce-5.1"};

constexpr std::array<std::string_view, 8> kRoutes = {
    "/api/v1/orders/{orderId}",
    "/api/v1/cart",
    "/api/v1/products/{id}",
    "/api/v1/checkout",
    "/healthz",
    "/api/v1/users/{userId}/addresses",
    "/api/v1/payments/{paymentId}/capture",
    "/api/v1/recommendations"};
constexpr std::array<std::string_view, 6> kQueries = {
    "SELECT o.id, o.status, o.total, o.currency, o.created_at FROM orders o "
    "WHERE o.user_id = ? ORDER BY o.created_at DESC LIMIT ?",
    "UPDATE cart_items SET quantity = ?, updated_at = now() WHERE cart_id = ? "
    "AND product_id = ?",
    "INSERT INTO payments (id, order_id, amount, currency, provider, status, "
    "created_at) VALUES (?, ?, ?, ?, ?, ?, now())",
    "SELECT p.id, p.name, p.description, p.price, p.stock, c.name AS category "
    "FROM products p JOIN categories c ON c.id = p.category_id WHERE p.id IN "
    "(?, ?, ?, ?, ?, ?, ?, ?)",
    "SELECT 1",
    "SELECT a.id, a.line1, a.line2, a.city, a.postal_code, a.country FROM "
    "addresses a WHERE a.user_id = ? AND a.deleted_at IS NULL"};
constexpr std::array<std::string_view, 4> kUserAgents = {
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like "
    "Gecko) Chrome/120.0.0.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) "
    "AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Mobile/15E148 "
    "Safari/604.1",
    "okhttp/4.12.0", "Go-http-client/2.0"};

SpanCategory PickCategory(Rng& rng) {
  const int r = static_cast<int>(rng.Uniform(0, 99));
  if (r < 15) return kHttpServer;
  if (r < 50) return kDb;
  if (r < 62) return kHttpClient;
  if (r < 85) return kInternal;
  if (r < 90) return kMessaging;
  return kCache;
}

void FillSpan(Rng& rng, SpanCategory category, trace::Span* s) {
  Attributes* a = s->mutable_attributes();
  uint64_t duration_ns = 0;
  switch (category) {
    case kHttpServer: {
      const std::string_view route = rng.Pick(kRoutes);
      const bool get = rng.Chance(0.7);
      s->set_name(Cat(get ? "GET " : "POST ", route));
      s->set_kind(trace::Span::SPAN_KIND_SERVER);
      Str(a, "http.request.method", get ? "GET" : "POST");
      Str(a, "url.path", Cat("/api/v1/orders/", rng.Digits(8)));
      Str(a, "url.scheme", "http");
      Str(a, "http.route", std::string(route));
      Int(a, "http.response.status_code", rng.Chance(0.97) ? 200 : 500);
      Str(a, "server.address", "checkout.shop-prod.svc.cluster.local");
      Int(a, "server.port", 8080);
      Str(a, "network.protocol.version", "1.1");
      Str(a, "user_agent.original", std::string(rng.Pick(kUserAgents)));
      Str(a, "client.address",
          Cat("10.", rng.Uniform(0, 255), ".", rng.Uniform(0, 255), ".",
              rng.Uniform(1, 254)));
      Str(a, "network.peer.address",
          Cat("10.", rng.Uniform(0, 255), ".", rng.Uniform(0, 255), ".",
              rng.Uniform(1, 254)));
      Int(a, "network.peer.port", rng.Uniform(32768, 60999));
      duration_ns = rng.LogUniform(500'000, 2'000'000'000);
      break;
    }
    case kDb: {
      const std::string_view query = rng.Pick(kQueries);
      s->set_name(Cat(query.substr(0, query.find(' ')), " shop.orders"));
      s->set_kind(trace::Span::SPAN_KIND_CLIENT);
      Str(a, "db.system.name", "postgresql");
      Str(a, "db.namespace", "shop");
      Str(a, "db.query.text", std::string(query));
      Str(a, "db.operation.name",
          std::string(query.substr(0, query.find(' '))));
      Str(a, "db.collection.name", "orders");
      Str(a, "server.address", "orders-db.shop-prod.svc.cluster.local");
      Int(a, "server.port", 5432);
      duration_ns = rng.LogUniform(100'000, 200'000'000);
      break;
    }
    case kHttpClient: {
      s->set_name("POST");
      s->set_kind(trace::Span::SPAN_KIND_CLIENT);
      Str(a, "http.request.method", "POST");
      Str(a, "url.full",
          Cat("http://payment.shop-prod.svc.cluster.local:8080/api/v1/"
              "payments/",
              rng.Hex(16), "/capture"));
      Str(a, "server.address", "payment.shop-prod.svc.cluster.local");
      Int(a, "server.port", 8080);
      Int(a, "http.response.status_code", rng.Chance(0.98) ? 200 : 503);
      Str(a, "network.protocol.version", "1.1");
      duration_ns = rng.LogUniform(1'000'000, 1'000'000'000);
      break;
    }
    case kInternal: {
      static constexpr std::array<std::string_view, 5> kNames = {
          "OrderService.placeOrder", "PricingEngine.quote", "validateCart",
          "InventoryClient.reserve", "serialize"};
      s->set_name(std::string(rng.Pick(kNames)));
      s->set_kind(trace::Span::SPAN_KIND_INTERNAL);
      const int n = static_cast<int>(rng.Uniform(0, 3));
      if (n > 0) Str(a, "app.order.id", rng.Digits(10));
      if (n > 1) Int(a, "app.cart.items", rng.Uniform(1, 30));
      if (n > 2) Bool(a, "app.order.express", rng.Chance(0.2));
      duration_ns = rng.LogUniform(10'000, 50'000'000);
      break;
    }
    case kMessaging: {
      s->set_name("publish order-events");
      s->set_kind(trace::Span::SPAN_KIND_PRODUCER);
      Str(a, "messaging.system", "kafka");
      Str(a, "messaging.destination.name", "order-events");
      Str(a, "messaging.operation.type", "send");
      Str(a, "messaging.client.id", "producer-1");
      Int(a, "messaging.destination.partition.id", rng.Uniform(0, 11));
      Str(a, "messaging.kafka.message.key", rng.Digits(10));
      duration_ns = rng.LogUniform(200'000, 20'000'000);
      break;
    }
    default: {
      s->set_name("GET");
      s->set_kind(trace::Span::SPAN_KIND_CLIENT);
      Str(a, "db.system.name", "redis");
      Str(a, "db.operation.name", "GET");
      Str(a, "server.address", "cache.shop-prod.svc.cluster.local");
      Int(a, "server.port", 6379);
      duration_ns = rng.LogUniform(50'000, 5'000'000);
      break;
    }
  }
  const uint64_t start = kBaseNanos + rng.Uniform(0, 5'000'000'000LL);
  s->set_start_time_unix_nano(start);
  s->set_end_time_unix_nano(start + duration_ns);
  // Sampled, with the parent's is-remote bit known (SDKs since 2024).
  s->set_flags(0x101);
  if (rng.Chance(0.03)) {
    s->mutable_status()->set_code(trace::Status::STATUS_CODE_ERROR);
    // Exceptions are recorded as span events with the stack trace: the
    // large attribute values of trace data (a few KB each).
    trace::Span::Event* e = s->add_events();
    e->set_name("exception");
    e->set_time_unix_nano(start + duration_ns / 2);
    Str(e->mutable_attributes(), "exception.type",
        "java.net.SocketTimeoutException");
    Str(e->mutable_attributes(), "exception.message",
        "Read timed out after 30000 ms");
    std::string stack = "java.net.SocketTimeoutException: Read timed out\n";
    const int frames = static_cast<int>(rng.Uniform(20, 60));
    for (int f = 0; f < frames; ++f) {
      stack += Cat("\tat com.shop.", rng.Pick(kServices), ".internal.Handler",
                   rng.Uniform(1, 99), ".invoke(Handler", rng.Uniform(1, 99),
                   ".java:", rng.Uniform(10, 900), ")\n");
    }
    Str(e->mutable_attributes(), "exception.stacktrace", std::move(stack));
  }
  if (category == kMessaging && rng.Chance(0.2)) {
    trace::Span::Link* l = s->add_links();  // batch-receive style link
    l->set_trace_id(rng.Bytes(16));
    l->set_span_id(rng.Bytes(8));
    l->set_flags(0x301);
  }
}

// One resource's spans: several traces, grouped by instrumentation scope.
void FillResourceSpans(Rng& rng, int spans, trace::ResourceSpans* rs) {
  FillResource(rng, rs->mutable_resource());
  rs->set_schema_url("https://opentelemetry.io/schemas/1.26.0");
  std::array<trace::ScopeSpans*, kNumCategories> scopes{};
  std::string trace_id;
  std::vector<std::string> trace_spans;
  for (int i = 0; i < spans; ++i) {
    const bool root = trace_spans.empty() || rng.Chance(1.0 / 12);
    if (root) {
      trace_id = rng.Bytes(16);
      trace_spans.clear();
    }
    const SpanCategory category = root ? kHttpServer : PickCategory(rng);
    trace::ScopeSpans*& scope = scopes[category];
    if (scope == nullptr) {
      scope = rs->add_scope_spans();
      scope->mutable_scope()->set_name(std::string(kScopeNames[category]));
      scope->mutable_scope()->set_version("2.10.0-alpha");
    }
    trace::Span* s = scope->add_spans();
    s->set_trace_id(trace_id);
    s->set_span_id(rng.Bytes(8));
    if (!trace_spans.empty()) {
      s->set_parent_span_id(trace_spans[rng.Next() % trace_spans.size()]);
    }
    trace_spans.emplace_back(s->span_id());  // a view with MicroString
    FillSpan(rng, category, s);
  }
}

enum BatchKind { kTimerFlush, kFullBatch, kCollectorBatch };

void MakeTraces(int kind, Rng& rng, google::protobuf::Message* m) {
  auto* request = static_cast<trace_svc::ExportTraceServiceRequest*>(m);
  if (kind == kCollectorBatch) {
    // A gateway collector's batch: 8192 spans from 8 services.
    for (int r = 0; r < 8; ++r) {
      FillResourceSpans(rng, 1024, request->add_resource_spans());
    }
    return;
  }
  const int spans =
      kind == kFullBatch ? 512 : static_cast<int>(rng.LogUniform(1, 511));
  FillResourceSpans(rng, spans, request->add_resource_spans());
}

std::vector<std::string> GenerateTraces(uint64_t seed, int count) {
  return GenerateMix(
      seed, count, {{kTimerFlush, 39}, {kFullBatch, 60}, {kCollectorBatch, 1}},
      &MakeTraces, trace_svc::ExportTraceServiceRequest::default_instance());
}

uint64_t WalkAny(const common::AnyValue& v);

uint64_t WalkAttributes(const Attributes& attributes) {
  uint64_t h = attributes.size();
  for (const common::KeyValue& kv : attributes) {
    h = Mix(h, HashStr(kv.key()));
    h = Mix(h, WalkAny(kv.value()));
  }
  return h;
}

uint64_t WalkAny(const common::AnyValue& v) {
  switch (v.value_case()) {
    case common::AnyValue::kStringValue:
      // Short values get compared (routes, status); long ones copied.
      return v.string_value().size() <= 64 ? HashStr(v.string_value())
                                           : Touch(v.string_value());
    case common::AnyValue::kBoolValue:
      return v.bool_value() ? 3 : 5;
    case common::AnyValue::kIntValue:
      return static_cast<uint64_t>(v.int_value());
    case common::AnyValue::kDoubleValue:
      return static_cast<uint64_t>(v.double_value() * 1000);
    case common::AnyValue::kBytesValue:
      return Touch(v.bytes_value());
    case common::AnyValue::kArrayValue: {
      uint64_t h = 7;
      for (const common::AnyValue& e : v.array_value().values()) {
        h = Mix(h, WalkAny(e));
      }
      return h;
    }
    case common::AnyValue::kKvlistValue:
      return WalkAttributes(v.kvlist_value().values());
    default:
      return 0;
  }
}

uint64_t WalkScope(const common::InstrumentationScope& scope) {
  return Mix(Mix(HashStr(scope.name()), HashStr(scope.version())),
             WalkAttributes(scope.attributes()));
}

// What a collector's receiver and a span-metrics/tail-sampling pipeline
// read: service name, ids, names, kinds, durations, status and attributes.
uint64_t WalkTraces(const google::protobuf::Message& m) {
  const auto& request =
      static_cast<const trace_svc::ExportTraceServiceRequest&>(m);
  uint64_t h = 0;
  for (const trace::ResourceSpans& rs : request.resource_spans()) {
    h = Mix(h, WalkAttributes(rs.resource().attributes()));
    for (const trace::ScopeSpans& ss : rs.scope_spans()) {
      h = Mix(h, WalkScope(ss.scope()));
      for (const trace::Span& s : ss.spans()) {
        h = Mix(h, HashStr(s.trace_id()));
        h = Mix(h, HashStr(s.span_id()) ^ HashStr(s.parent_span_id()));
        h = Mix(h, HashStr(s.name()));
        h = Mix(h, s.kind() * 131 + s.status().code());
        h = Mix(h, s.end_time_unix_nano() - s.start_time_unix_nano());
        h = Mix(h, WalkAttributes(s.attributes()));
        for (const trace::Span::Event& e : s.events()) {
          h = Mix(h, HashStr(e.name()) ^ WalkAttributes(e.attributes()));
        }
        for (const trace::Span::Link& l : s.links()) {
          h = Mix(h, HashStr(l.trace_id()) ^ HashStr(l.span_id()));
        }
      }
    }
  }
  return h;
}

// Success is an empty response; spans without ids are rejected the way the
// collector reports it (partial_success).
void RespondTraces(const google::protobuf::Message& m,
                   google::protobuf::Message* r) {
  const auto& request =
      static_cast<const trace_svc::ExportTraceServiceRequest&>(m);
  auto* response = static_cast<trace_svc::ExportTraceServiceResponse*>(r);
  int64_t rejected = 0;
  for (const trace::ResourceSpans& rs : request.resource_spans()) {
    for (const trace::ScopeSpans& ss : rs.scope_spans()) {
      for (const trace::Span& s : ss.spans()) {
        rejected += s.trace_id().size() != 16 || s.span_id().size() != 8;
      }
    }
  }
  if (rejected > 0) {
    response->mutable_partial_success()->set_rejected_spans(rejected);
    response->mutable_partial_success()->set_error_message(
        "invalid trace or span id");
  }
}

// --------------------------------------------------------------- metrics

enum MetricType { kGauge, kCounter, kUpDown, kHistogram };

struct MetricTemplate {
  std::string_view name;
  std::string_view unit;
  std::string_view description;
  MetricType type;
  bool is_double;
  int min_points;
  int max_points;
  std::array<std::string_view, 5> attribute_keys;  // "" ends the list
};

// Semantic-convention metrics of a JVM service with HTTP, DB, RPC and
// Kafka instrumentation (the Java agent's defaults plus two app metrics).
constexpr std::array<MetricTemplate, 15> kMetricTemplates = {{
    {"http.server.request.duration",
     "s",
     "Duration of HTTP server requests.",
     kHistogram,
     true,
     5,
     60,
     {"http.request.method", "http.route", "http.response.status_code",
      "url.scheme", "network.protocol.version"}},
    {"http.client.request.duration",
     "s",
     "Duration of HTTP client requests.",
     kHistogram,
     true,
     2,
     20,
     {"http.request.method", "server.address", "server.port",
      "http.response.status_code", ""}},
    {"db.client.operation.duration",
     "s",
     "Duration of database client operations.",
     kHistogram,
     true,
     2,
     30,
     {"db.system.name", "db.operation.name", "db.collection.name",
      "server.address", ""}},
    {"rpc.server.duration",
     "ms",
     "Measures the duration of inbound RPC.",
     kHistogram,
     true,
     2,
     20,
     {"rpc.system", "rpc.service", "rpc.method", "rpc.grpc.status_code", ""}},
    {"jvm.gc.duration",
     "s",
     "Duration of JVM garbage collection actions.",
     kHistogram,
     true,
     1,
     3,
     {"jvm.gc.action", "jvm.gc.name", "", "", ""}},
    {"jvm.memory.used",
     "By",
     "Measure of memory used.",
     kUpDown,
     false,
     6,
     10,
     {"jvm.memory.type", "jvm.memory.pool.name", "", "", ""}},
    {"jvm.memory.committed",
     "By",
     "Measure of memory committed.",
     kUpDown,
     false,
     6,
     10,
     {"jvm.memory.type", "jvm.memory.pool.name", "", "", ""}},
    {"jvm.memory.limit",
     "By",
     "Measure of max obtainable memory.",
     kUpDown,
     false,
     4,
     8,
     {"jvm.memory.type", "jvm.memory.pool.name", "", "", ""}},
    {"jvm.thread.count",
     "{thread}",
     "Number of executing platform threads.",
     kUpDown,
     false,
     4,
     12,
     {"jvm.thread.daemon", "jvm.thread.state", "", "", ""}},
    {"jvm.class.loaded",
     "{class}",
     "Number of classes loaded since JVM start.",
     kCounter,
     false,
     1,
     1,
     {"", "", "", "", ""}},
    {"jvm.cpu.time",
     "s",
     "CPU time used by the process as reported by the JVM.",
     kCounter,
     true,
     1,
     1,
     {"", "", "", "", ""}},
    {"jvm.cpu.recent_utilization",
     "1",
     "Recent CPU utilization for the process as reported by the JVM.",
     kGauge,
     true,
     1,
     1,
     {"", "", "", "", ""}},
    {"kafka.consumer.records_lag",
     "{record}",
     "Current lag of the partition.",
     kGauge,
     true,
     3,
     24,
     {"client-id", "topic", "partition", "", ""}},
    {"app.orders.processed",
     "{order}",
     "Orders processed.",
     kCounter,
     false,
     2,
     10,
     {"app.region", "app.order.status", "", "", ""}},
    {"app.cart.size",
     "{item}",
     "Items per cart at checkout.",
     kHistogram,
     false,
     1,
     4,
     {"app.region", "", "", "", ""}},
}};

// Semantic-convention advisory boundaries for HTTP/DB durations (seconds).
constexpr std::array<double, 14> kDurationBounds = {
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10};
// The SDK's default explicit bucket boundaries.
constexpr std::array<double, 15> kDefaultBounds = {
    0, 5, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000};

std::string AttributeValue(Rng& rng, std::string_view key) {
  if (key == "http.route") return std::string(rng.Pick(kRoutes));
  if (key == "http.request.method") return rng.Chance(0.7) ? "GET" : "POST";
  if (key == "server.address") return "payment.shop-prod.svc.cluster.local";
  if (key == "jvm.memory.pool.name") {
    static constexpr std::array<std::string_view, 6> kPools = {
        "G1 Eden Space",           "G1 Old Gen",
        "G1 Survivor Space",       "Metaspace",
        "CodeHeap 'non-nmethods'", "Compressed Class Space"};
    return std::string(rng.Pick(kPools));
  }
  if (key == "topic") return "order-events";
  return Cat(key.substr(key.rfind('.') + 1), "-", rng.Uniform(0, 20));
}

void FillPointAttributes(Rng& rng, const MetricTemplate& t, Attributes* a) {
  for (std::string_view key : t.attribute_keys) {
    if (key.empty()) break;
    if (key == "http.response.status_code" || key == "server.port" ||
        key == "rpc.grpc.status_code" || key == "partition") {
      Int(a, key,
          key == "http.response.status_code" ? (rng.Chance(0.9) ? 200 : 404)
                                             : rng.Uniform(0, 16));
    } else if (key == "jvm.thread.daemon") {
      Bool(a, key, rng.Chance(0.5));
    } else {
      Str(a, key, AttributeValue(rng, key));
    }
  }
}

void FillMetric(Rng& rng, const MetricTemplate& t, int points,
                metrics::Metric* m) {
  m->set_name(std::string(t.name));
  m->set_unit(std::string(t.unit));
  m->set_description(std::string(t.description));
  // Cumulative since process start: the OTLP exporters' default.
  const uint64_t start = kBaseNanos - 3'600'000'000'000ULL;
  const uint64_t now = kBaseNanos + rng.Uniform(0, 59) * 1'000'000'000ULL;
  if (t.type == kHistogram) {
    metrics::Histogram* h = m->mutable_histogram();
    h->set_aggregation_temporality(metrics::AGGREGATION_TEMPORALITY_CUMULATIVE);
    const bool duration = t.unit == "s";
    for (int p = 0; p < points; ++p) {
      metrics::HistogramDataPoint* dp = h->add_data_points();
      FillPointAttributes(rng, t, dp->mutable_attributes());
      dp->set_start_time_unix_nano(start);
      dp->set_time_unix_nano(now);
      uint64_t count = 0;
      const int buckets =
          (duration ? kDurationBounds.size() : kDefaultBounds.size()) + 1;
      for (int b = 0; b < buckets; ++b) {
        const uint64_t c =
            b < buckets / 2 ? rng.LogUniform(1, 100000) : rng.Uniform(0, 50);
        dp->add_bucket_counts(c);
        count += c;
      }
      if (duration) {
        for (double bound : kDurationBounds) dp->add_explicit_bounds(bound);
      } else {
        for (double bound : kDefaultBounds) dp->add_explicit_bounds(bound);
      }
      dp->set_count(count);
      // proto3 `optional`: has-bits, set by every SDK for non-negative
      // instruments.
      dp->set_sum(static_cast<double>(count) * 0.042);
      dp->set_min(0.0007);
      dp->set_max(static_cast<double>(rng.Uniform(1, 12000)) / 1000);
      if (rng.Chance(0.2)) {  // trace_based exemplar filter, sampled span
        metrics::Exemplar* e = dp->add_exemplars();
        e->set_time_unix_nano(now - rng.Uniform(0, 59'000'000'000LL));
        e->set_as_double(static_cast<double>(rng.Uniform(1, 3000)) / 1000);
        e->set_trace_id(rng.Bytes(16));
        e->set_span_id(rng.Bytes(8));
      }
    }
    return;
  }
  google::protobuf::RepeatedPtrField<metrics::NumberDataPoint>* dps;
  if (t.type == kGauge) {
    dps = m->mutable_gauge()->mutable_data_points();
  } else {
    metrics::Sum* sum = m->mutable_sum();
    sum->set_aggregation_temporality(
        metrics::AGGREGATION_TEMPORALITY_CUMULATIVE);
    sum->set_is_monotonic(t.type == kCounter);
    dps = sum->mutable_data_points();
  }
  for (int p = 0; p < points; ++p) {
    metrics::NumberDataPoint* dp = dps->Add();
    FillPointAttributes(rng, t, dp->mutable_attributes());
    if (t.type != kGauge) dp->set_start_time_unix_nano(start);
    dp->set_time_unix_nano(now);
    if (t.is_double) {
      dp->set_as_double(static_cast<double>(rng.Uniform(0, 1'000'000)) / 997);
    } else {
      dp->set_as_int(rng.LogUniform(1, 4'000'000'000LL));
    }
  }
}

// One process's export: every template once (with its own cardinality),
// then more HTTP/DB series until about `points` data points.
void FillResourceMetrics(Rng& rng, int points, metrics::ResourceMetrics* rm) {
  FillResource(rng, rm->mutable_resource());
  rm->set_schema_url("https://opentelemetry.io/schemas/1.26.0");
  metrics::ScopeMetrics* runtime = rm->add_scope_metrics();
  runtime->mutable_scope()->set_name(
      "io.opentelemetry.runtime-telemetry-java17");
  runtime->mutable_scope()->set_version("2.10.0-alpha");
  metrics::ScopeMetrics* instrumentation = rm->add_scope_metrics();
  instrumentation->mutable_scope()->set_name("io.opentelemetry.tomcat-10.0");
  instrumentation->mutable_scope()->set_version("2.10.0-alpha");
  int total = 0;
  size_t i = 0;
  while (total < points) {
    const MetricTemplate& t = kMetricTemplates[i % kMetricTemplates.size()];
    const int n = std::min<int>(
        points - total,
        static_cast<int>(rng.Uniform(t.min_points, t.max_points)));
    metrics::ScopeMetrics* scope =
        t.name.starts_with("jvm.") ? runtime : instrumentation;
    FillMetric(rng, t, n, scope->add_metrics());
    total += n;
    ++i;
  }
}

enum MetricsKind { kSmallProcess, kServiceProcess, kCollectorMetrics };

void MakeMetrics(int kind, Rng& rng, google::protobuf::Message* m) {
  auto* request = static_cast<metrics_svc::ExportMetricsServiceRequest*>(m);
  switch (kind) {
    case kSmallProcess:  // sidecar / small job: runtime metrics and a few
                         // series
      FillResourceMetrics(rng, static_cast<int>(rng.Uniform(20, 100)),
                          request->add_resource_metrics());
      break;
    case kServiceProcess:  // an instrumented web service, per 60 s
      FillResourceMetrics(rng, static_cast<int>(rng.LogUniform(100, 1200)),
                          request->add_resource_metrics());
      break;
    default:  // a gateway collector's 8192-point batch from 8 processes
      for (int r = 0; r < 8; ++r) {
        FillResourceMetrics(rng, 1024, request->add_resource_metrics());
      }
      break;
  }
}

std::vector<std::string> GenerateMetrics(uint64_t seed, int count) {
  return GenerateMix(
      seed, count,
      {{kSmallProcess, 30}, {kServiceProcess, 69}, {kCollectorMetrics, 1}},
      &MakeMetrics,
      metrics_svc::ExportMetricsServiceRequest::default_instance());
}

uint64_t WalkNumberPoints(
    const google::protobuf::RepeatedPtrField<metrics::NumberDataPoint>& dps) {
  uint64_t h = dps.size();
  for (const metrics::NumberDataPoint& dp : dps) {
    h = Mix(h, WalkAttributes(dp.attributes()));
    h = Mix(h, dp.time_unix_nano() - dp.start_time_unix_nano());
    h = Mix(h, dp.value_case() == metrics::NumberDataPoint::kAsDouble
                   ? static_cast<uint64_t>(dp.as_double())
                   : static_cast<uint64_t>(dp.as_int()));
  }
  return h;
}

// What a metrics backend's OTLP ingester reads: names, types, attributes,
// values, buckets, and whether sum/min/max are present.
uint64_t WalkMetrics(const google::protobuf::Message& m) {
  const auto& request =
      static_cast<const metrics_svc::ExportMetricsServiceRequest&>(m);
  uint64_t h = 0;
  for (const metrics::ResourceMetrics& rm : request.resource_metrics()) {
    h = Mix(h, WalkAttributes(rm.resource().attributes()));
    for (const metrics::ScopeMetrics& sm : rm.scope_metrics()) {
      h = Mix(h, WalkScope(sm.scope()));
      for (const metrics::Metric& metric : sm.metrics()) {
        h = Mix(h, HashStr(metric.name()) ^ HashStr(metric.unit()));
        switch (metric.data_case()) {
          case metrics::Metric::kGauge:
            h = Mix(h, WalkNumberPoints(metric.gauge().data_points()));
            break;
          case metrics::Metric::kSum:
            h = Mix(h, metric.sum().is_monotonic());
            h = Mix(h, WalkNumberPoints(metric.sum().data_points()));
            break;
          case metrics::Metric::kHistogram:
            for (const metrics::HistogramDataPoint& dp :
                 metric.histogram().data_points()) {
              h = Mix(h, WalkAttributes(dp.attributes()));
              h = Mix(h, dp.count());
              if (dp.has_sum()) h = Mix(h, static_cast<uint64_t>(dp.sum()));
              if (dp.has_min()) {
                h = Mix(h, static_cast<uint64_t>(dp.min() * 1e6));
              }
              if (dp.has_max()) {
                h = Mix(h, static_cast<uint64_t>(dp.max() * 1e6));
              }
              for (uint64_t c : dp.bucket_counts()) h += c;
              for (double b : dp.explicit_bounds()) {
                h += static_cast<uint64_t>(b * 1000);
              }
              for (const metrics::Exemplar& e : dp.exemplars()) {
                h = Mix(h, HashStr(e.trace_id()) ^ HashStr(e.span_id()));
              }
            }
            break;
          default:
            break;
        }
      }
    }
  }
  return h;
}

void RespondMetrics(const google::protobuf::Message& /*request*/,
                    google::protobuf::Message* /*response*/) {
  // Accepted: the empty ExportMetricsServiceResponse.
}

// ------------------------------------------------------------------ logs

constexpr std::array<std::string_view, 6> kLoggers = {
    "com.shop.checkout.OrderService",
    "com.shop.checkout.PaymentClient",
    "org.springframework.web.servlet.DispatcherServlet",
    "org.hibernate.SQL",
    "com.zaxxer.hikari.pool.HikariPool",
    "com.shop.checkout.KafkaPublisher"};

void FillLogRecord(Rng& rng, logs::LogRecord* r) {
  const uint64_t t = kBaseNanos + rng.Uniform(0, 1'000'000'000LL);
  r->set_time_unix_nano(t);
  r->set_observed_time_unix_nano(t + rng.Uniform(1000, 900000));
  const int sev = static_cast<int>(rng.Uniform(0, 99));
  const bool error = sev >= 95;
  if (sev < 10) {
    r->set_severity_number(logs::SEVERITY_NUMBER_DEBUG);
    r->set_severity_text("DEBUG");
  } else if (sev < 80) {
    r->set_severity_number(logs::SEVERITY_NUMBER_INFO);
    r->set_severity_text("INFO");
  } else if (!error) {
    r->set_severity_number(logs::SEVERITY_NUMBER_WARN);
    r->set_severity_text("WARN");
  } else {
    r->set_severity_number(logs::SEVERITY_NUMBER_ERROR);
    r->set_severity_text("ERROR");
  }
  // Application log lines: typically 60-300 characters.
  r->mutable_body()->set_string_value(
      rng.Words(static_cast<int>(rng.LogUniform(40, 300))));
  Attributes* a = r->mutable_attributes();
  Str(a, "thread.name", Cat("http-nio-8080-exec-", rng.Uniform(1, 200)));
  Int(a, "thread.id", rng.Uniform(30, 400));
  if (rng.Chance(0.3)) Str(a, "app.order.id", rng.Digits(10));
  if (error) {
    Str(a, "exception.type",
        "org.springframework.dao.DataAccessResourceFailureException");
    Str(a, "exception.message", "Unable to acquire JDBC Connection");
    std::string stack;
    const int frames = static_cast<int>(rng.Uniform(30, 80));
    for (int f = 0; f < frames; ++f) {
      stack += Cat("\tat org.hibernate.engine.jdbc.internal.Frame",
                   rng.Uniform(1, 999),
                   ".call(Frame.java:", rng.Uniform(10, 900), ")\n");
    }
    Str(a, "exception.stacktrace", std::move(stack));
  }
  if (rng.Chance(0.6)) {  // logged inside a span
    r->set_trace_id(rng.Bytes(16));
    r->set_span_id(rng.Bytes(8));
    r->set_flags(1);
  }
}

void FillResourceLogs(Rng& rng, int records, logs::ResourceLogs* rl) {
  FillResource(rng, rl->mutable_resource());
  std::array<logs::ScopeLogs*, kLoggers.size()> scopes{};
  for (int i = 0; i < records; ++i) {
    // The logger's name is the instrumentation scope (log appenders).
    const size_t logger = rng.Next() % kLoggers.size();
    if (scopes[logger] == nullptr) {
      scopes[logger] = rl->add_scope_logs();
      scopes[logger]->mutable_scope()->set_name(std::string(kLoggers[logger]));
    }
    FillLogRecord(rng, scopes[logger]->add_log_records());
  }
}

void MakeLogs(int kind, Rng& rng, google::protobuf::Message* m) {
  auto* request = static_cast<logs_svc::ExportLogsServiceRequest*>(m);
  if (kind == kCollectorBatch) {
    for (int r = 0; r < 8; ++r) {
      FillResourceLogs(rng, 1024, request->add_resource_logs());
    }
    return;
  }
  const int records =
      kind == kFullBatch ? 512 : static_cast<int>(rng.LogUniform(1, 511));
  FillResourceLogs(rng, records, request->add_resource_logs());
}

std::vector<std::string> GenerateLogs(uint64_t seed, int count) {
  return GenerateMix(
      seed, count, {{kTimerFlush, 59}, {kFullBatch, 40}, {kCollectorBatch, 1}},
      &MakeLogs, logs_svc::ExportLogsServiceRequest::default_instance());
}

// What a log backend's ingester reads: resource and scope, time,
// severity, body, attributes and the trace context.
uint64_t WalkLogs(const google::protobuf::Message& m) {
  const auto& request =
      static_cast<const logs_svc::ExportLogsServiceRequest&>(m);
  uint64_t h = 0;
  for (const logs::ResourceLogs& rl : request.resource_logs()) {
    h = Mix(h, WalkAttributes(rl.resource().attributes()));
    for (const logs::ScopeLogs& sl : rl.scope_logs()) {
      h = Mix(h, WalkScope(sl.scope()));
      for (const logs::LogRecord& r : sl.log_records()) {
        h = Mix(h, r.time_unix_nano() ^ r.severity_number());
        h = Mix(h, HashStr(r.severity_text()));
        h = Mix(h, WalkAny(r.body()));
        h = Mix(h, WalkAttributes(r.attributes()));
        h = Mix(h, HashStr(r.trace_id()) ^ HashStr(r.span_id()));
      }
    }
  }
  return h;
}

void RespondLogs(const google::protobuf::Message& /*request*/,
                 google::protobuf::Message* /*response*/) {
  // Accepted: the empty ExportLogsServiceResponse.
}

}  // namespace

Service OtlpTraceService() {
  return Service{
      .name = "otlp_trace",
      .method = "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
      .proto = "opentelemetry/proto/collector/trace/v1/trace_service.proto",
      .request = trace_svc::ExportTraceServiceRequest::descriptor(),
      .response = trace_svc::ExportTraceServiceResponse::descriptor(),
      .shape =
          "proto3 singular nesting 5 deep, repeated KeyValue{key, AnyValue "
          "oneof}, 16/8-byte id bytes, string attributes",
      .sizes_from =
          "SDK BatchSpanProcessor max_export_batch_size 512 (60% full, "
          "39% timer flushes of 1-511); 1% collector batches of 8192 "
          "spans (send_batch_size)",
      .generate = &GenerateTraces,
      .walk = &WalkTraces,
      .respond = &RespondTraces};
}

Service OtlpMetricsService() {
  return Service{
      .name = "otlp_metrics",
      .method =
          "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export",
      .proto = "opentelemetry/proto/collector/metrics/v1/metrics_service.proto",
      .request = metrics_svc::ExportMetricsServiceRequest::descriptor(),
      .response = metrics_svc::ExportMetricsServiceResponse::descriptor(),
      .shape =
          "oneofs (Metric.data, point value), repeated fixed64/double "
          "(buckets, bounds), proto3 optional has-bits (sum/min/max)",
      .sizes_from =
          "PeriodicExportingMetricReader: every stream of a process per "
          "60 s (20-1200 points); 1% collector batches of 8192 points",
      .generate = &GenerateMetrics,
      .walk = &WalkMetrics,
      .respond = &RespondMetrics};
}

Service OtlpLogsService() {
  return Service{
      .name = "otlp_logs",
      .method = "/opentelemetry.proto.collector.logs.v1.LogsService/Export",
      .proto = "opentelemetry/proto/collector/logs/v1/logs_service.proto",
      .request = logs_svc::ExportLogsServiceRequest::descriptor(),
      .response = logs_svc::ExportLogsServiceResponse::descriptor(),
      .shape =
          "string-heavy records (40-300 B bodies, KB stack traces), "
          "AnyValue oneof body, scope per logger",
      .sizes_from =
          "SDK BatchLogRecordProcessor max_export_batch_size 512, delay "
          "1 s (40% full, 59% partial); 1% collector batches of 8192",
      .generate = &GenerateLogs,
      .walk = &WalkLogs,
      .respond = &RespondLogs};
}

}  // namespace arenarpc::corpus::internal
