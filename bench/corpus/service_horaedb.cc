// storage.StorageService/Write (crate horaedbproto 2.0.0): Apache HoraeDB's
// write path, Prometheus remote write over gRPC in HoraeDB's layout: a batch
// is tables (one per metric name, as HoraeDB maps Prometheus metrics) of
// series, each series repeated tags (labels) and repeated field groups
// (timestamped samples). Not all-repeated: every tag and field holds a
// proto3 singular `Value` message (no has-bit, a oneof inside), which
// protobuf's Clear() deletes. MakeRemoteWriteBatch() is shared with
// service_cortex.cc, which sends the same series in Prometheus' layout.
//
// Numbers: Prometheus remote_write queue_config max_samples_per_send 2000
// (the default), batch_send_deadline 5 s; with scrape intervals of 15-60 s
// a batch holds one sample per series, so a full batch is ~2000 series.
// Series carry ~8-14 labels: Kubernetes service discovery's plus the
// external label (cluster); cAdvisor's id/image/name labels are
// the long ones. A full batch is ~0.6-0.7 MB.
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "corpus_internal.h"
#include "storage.pb.h"

namespace arenarpc::corpus::internal {
namespace {

using ::storage::FieldGroup;
using ::storage::WriteRequest;
using ::storage::WriteResponse;
using ::storage::WriteSeriesEntry;
using ::storage::WriteTableRequest;

// A scrape job's metric family: name, its own labels, series per target.
struct Family {
  std::string_view name;
  std::string_view job;
  std::array<std::string_view, 6> labels;  // "" ends the list
  int min_series;
  int max_series;
};

constexpr std::array<Family, 10> kFamilies = {{
    {"node_cpu_seconds_total",
     "node-exporter",
     {"cpu", "mode", "", "", "", ""},
     16,
     64},
    {"node_filesystem_avail_bytes",
     "node-exporter",
     {"device", "fstype", "mountpoint", "", "", ""},
     4,
     12},
    {"node_network_receive_bytes_total",
     "node-exporter",
     {"device", "", "", "", "", ""},
     2,
     8},
    {"container_cpu_usage_seconds_total",
     "kubelet",
     {"container", "cpu", "id", "image", "name", "metrics_path"},
     10,
     60},
    {"container_memory_working_set_bytes",
     "kubelet",
     {"container", "id", "image", "name", "metrics_path", ""},
     10,
     60},
    {"kube_pod_status_phase",
     "kube-state-metrics",
     {"phase", "uid", "", "", "", ""},
     5,
     40},
    {"kube_deployment_status_replicas_available",
     "kube-state-metrics",
     {"deployment", "", "", "", "", ""},
     2,
     20},
    {"http_server_requests_seconds_bucket",
     "checkout",
     {"le", "method", "uri", "status", "outcome", "exception"},
     20,
     200},
    {"http_server_requests_seconds_count",
     "checkout",
     {"method", "uri", "status", "outcome", "exception", ""},
     2,
     20},
    {"jvm_memory_used_bytes",
     "checkout",
     {"area", "id", "", "", "", ""},
     4,
     10},
}};

std::string LabelValue(Rng& rng, std::string_view label, std::string_view pod) {
  if (label == "cpu") return Cat(rng.Uniform(0, 31));
  if (label == "mode") {
    static constexpr std::array<std::string_view, 8> kModes = {
        "idle", "user", "system", "iowait", "irq", "softirq", "steal", "nice"};
    return std::string(rng.Pick(kModes));
  }
  if (label == "id") {
    return Cat(
        "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod",
        rng.Hex(8), "_", rng.Hex(4), "_", rng.Hex(4), "_", rng.Hex(4), "_",
        rng.Hex(12), ".slice/cri-containerd-", rng.Hex(64), ".scope");
  }
  if (label == "image") {
    return Cat("europe-docker.pkg.dev/shop-prod/images/checkout:1.",
               rng.Uniform(0, 40), ".", rng.Uniform(0, 9));
  }
  if (label == "name") return rng.Hex(64);
  if (label == "metrics_path") return "/metrics/cadvisor";
  if (label == "uid") {
    return Cat(rng.Hex(8), "-", rng.Hex(4), "-", rng.Hex(4), "-", rng.Hex(4),
               "-", rng.Hex(12));
  }
  if (label == "le") {
    static constexpr std::array<std::string_view, 12> kLe = {
        "0.005", "0.01", "0.025", "0.05", "0.1",  "0.25",
        "0.5",   "1.0",  "2.5",   "5.0",  "10.0", "+Inf"};
    return std::string(rng.Pick(kLe));
  }
  if (label == "uri") {
    static constexpr std::array<std::string_view, 5> kUris = {
        "/api/v1/orders/{orderId}", "/api/v1/cart", "/api/v1/checkout",
        "/actuator/health", "UNKNOWN"};
    return std::string(rng.Pick(kUris));
  }
  if (label == "container") return "checkout";
  if (label == "deployment") return std::string(pod.substr(0, pod.find('-')));
  return Cat(label, "-", rng.Uniform(0, 9));
}

// Appends one family's series for one target to `table` (tag_names is the
// table's label list, each tag points into it).
void AddSeries(Rng& rng, const Family& f, int series,
               WriteTableRequest* table) {
  if (table->tag_names().empty()) {
    // The external label, the Kubernetes service-discovery target labels,
    // the node for node-level jobs, then the family's own.
    for (std::string_view l : {"cluster", "job", "instance", "namespace", "pod",
                               "service", "endpoint"}) {
      table->add_tag_names(std::string(l));
    }
    if (f.job == "kubelet" || f.job == "node-exporter") {
      table->add_tag_names("node");
    }
    for (std::string_view l : f.labels) {
      if (!l.empty()) table->add_tag_names(std::string(l));
    }
    table->add_field_names("value");
  }
  const std::string pod = Cat("checkout-", rng.Hex(10), "-", rng.Hex(5));
  const std::string instance =
      Cat("10.", rng.Uniform(0, 255), ".", rng.Uniform(0, 255), ".",
          rng.Uniform(1, 254), ":", f.job == "kubelet" ? 10250 : 9100);
  const std::string node = Cat("gke-prod-pool-", rng.Hex(8), "-", rng.Hex(4));
  const int64_t timestamp_ms = 1700000000000LL + rng.Uniform(0, 4999);
  for (int s = 0; s < series; ++s) {
    WriteSeriesEntry* e = table->add_entries();
    for (int i = 0; i < table->tag_names_size(); ++i) {
      const std::string_view label = table->tag_names(i);
      std::string value;
      if (label == "cluster") {
        value = "prod-europe-west1";
      } else if (label == "job" || label == "service") {
        value = std::string(f.job);
      } else if (label == "instance") {
        value = instance;
      } else if (label == "namespace") {
        value = "shop-prod";
      } else if (label == "pod") {
        value = pod;
      } else if (label == "endpoint") {
        value = f.job == "kubelet" ? "https-metrics" : "http-metrics";
      } else if (label == "node") {
        value = node;
      } else {
        value = LabelValue(rng, label, pod);
      }
      auto* tag = e->add_tags();
      tag->set_name_index(i);
      tag->mutable_value()->set_string_value(std::move(value));
    }
    // One sample per series per batch; ~2% are behind and carry two.
    const int samples = rng.Chance(0.02) ? 2 : 1;
    for (int k = 0; k < samples; ++k) {
      FieldGroup* g = e->add_field_groups();
      g->set_timestamp(timestamp_ms - k * 15000);
      auto* field = g->add_fields();
      field->set_name_index(0);
      field->mutable_value()->set_float64_value(
          static_cast<double>(rng.LogUniform(1, 1LL << 40)) / 1024);
    }
  }
}

}  // namespace

void MakeRemoteWriteBatch(int kind, Rng& rng, google::protobuf::Message* m) {
  auto* request = static_cast<WriteRequest*>(m);
  request->mutable_context()->set_database("public");
  const int target =
      kind == kFullBatch ? 2000 : static_cast<int>(rng.LogUniform(100, 1999));
  std::array<WriteTableRequest*, kFamilies.size()> tables{};
  int written = 0;
  while (written < target) {
    const size_t f = rng.Next() % kFamilies.size();
    if (tables[f] == nullptr) {
      tables[f] = request->add_table_requests();
      tables[f]->set_table(std::string(kFamilies[f].name));
    }
    const int series =
        std::min<int>(target - written,
                      static_cast<int>(rng.Uniform(kFamilies[f].min_series,
                                                   kFamilies[f].max_series)));
    AddSeries(rng, kFamilies[f], series, tables[f]);
    written += series;
  }
}

namespace {

std::vector<std::string> Generate(uint64_t seed, int count) {
  // Remote write is capped at max_samples_per_send: no larger requests.
  return GenerateMix(seed, count, kRemoteWriteMix, &MakeRemoteWriteBatch,
                     WriteRequest::default_instance());
}

uint64_t ValueHash(const storage::Value& v) {
  switch (v.value_case()) {
    case storage::Value::kStringValue:
      return HashStr(v.string_value());
    case storage::Value::kFloat64Value:
      return static_cast<uint64_t>(v.float64_value());
    case storage::Value::kInt64Value:
      return static_cast<uint64_t>(v.int64_value());
    default:
      return static_cast<uint64_t>(v.value_case());
  }
}

// What the write path reads: table, tag names, each series' tags (hashed
// into a series id), and every sample's timestamp and value.
uint64_t Walk(const google::protobuf::Message& m) {
  const auto& request = static_cast<const WriteRequest&>(m);
  uint64_t h = HashStr(request.context().database());
  for (const WriteTableRequest& table : request.table_requests()) {
    h = Mix(h, HashStr(table.table()));
    for (const std::string& name : table.tag_names()) h = Mix(h, HashStr(name));
    for (const WriteSeriesEntry& e : table.entries()) {
      uint64_t tsid = 0;
      for (const auto& tag : e.tags()) {
        if (static_cast<int>(tag.name_index()) >= table.tag_names_size()) {
          continue;
        }
        tsid = Mix(tsid, tag.name_index() ^ ValueHash(tag.value()));
      }
      h = Mix(h, tsid);
      for (const FieldGroup& g : e.field_groups()) {
        h = Mix(h, static_cast<uint64_t>(g.timestamp()));
        for (const auto& field : g.fields()) {
          h = Mix(h, field.name_index() ^ ValueHash(field.value()));
        }
      }
    }
  }
  return h;
}

// Rows written (one per field group) and the success code.
void Respond(const google::protobuf::Message& m, google::protobuf::Message* r) {
  const auto& request = static_cast<const WriteRequest&>(m);
  auto* response = static_cast<WriteResponse*>(r);
  uint32_t rows = 0;
  for (const WriteTableRequest& table : request.table_requests()) {
    for (const WriteSeriesEntry& e : table.entries()) {
      rows += e.field_groups_size();
    }
  }
  response->mutable_header()->set_code(200);
  response->set_success(rows);
}

}  // namespace

Service HoraedbService() {
  return Service{
      .name = "horaedb_write",
      .method = "/storage.StorageService/Write",
      .proto = "storage.proto",
      .request = WriteRequest::descriptor(),
      .response = WriteResponse::descriptor(),
      .shape =
          "remote-write batch as tables of ~2000 series x (8-14 tags + "
          "timestamped samples); every tag and field holds a proto3 singular "
          "Value message (no has-bit) with a oneof",
      .sizes_from =
          "Prometheus remote_write max_samples_per_send 2000: 80% full "
          "batches (~0.6-0.7 MB), 20% deadline flushes of 100-1999",
      .generate = &Generate,
      .walk = &Walk,
      .respond = &Respond};
}

}  // namespace arenarpc::corpus::internal
