// cortex_push: Cortex's distributor.Distributor.Push, Prometheus remote
// write over gRPC (cortexpb.WriteRequest is prompb.WriteRequest with gogoproto
// options). The all-repeated shape: series of {name, value} byte pairs and
// {value, timestamp} samples, no singular message anywhere on the path, so
// protobuf's Clear() keeps all of it.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "corpus_internal.h"
#include "github.com/cortexproject/cortex/pkg/cortexpb/cortex.pb.h"
#include "github.com/cortexproject/cortex/pkg/distributor/distributorpb/distributor.pb.h"
#include "storage.pb.h"

namespace arenarpc::corpus::internal {
namespace {

using ::cortexpb::LabelPair;
using ::cortexpb::Sample;
using ::cortexpb::TimeSeries;
using ::cortexpb::WriteRequest;
using ::cortexpb::WriteResponse;

// The same batch the HoraeDB service writes (series, labels, samples), in
// Prometheus' layout: per series `__name__` plus every label, sorted by
// name as Prometheus sends them, then its samples.
void Make(int kind, Rng& rng, google::protobuf::Message* m) {
  storage::WriteRequest batch;
  MakeRemoteWriteBatch(kind, rng, &batch);
  auto* request = static_cast<WriteRequest*>(m);
  std::vector<std::pair<std::string, std::string>> labels;
  for (const storage::WriteTableRequest& table : batch.table_requests()) {
    for (const storage::WriteSeriesEntry& e : table.entries()) {
      labels.clear();
      labels.emplace_back("__name__", table.table());
      for (const storage::Tag& tag : e.tags()) {
        labels.emplace_back(table.tag_names(static_cast<int>(tag.name_index())),
                            tag.value().string_value());
      }
      std::sort(labels.begin(), labels.end());
      TimeSeries* series = request->add_timeseries();
      for (auto& [name, value] : labels) {
        LabelPair* pair = series->add_labels();
        pair->set_name(std::move(name));
        pair->set_value(std::move(value));
      }
      // Oldest sample first.
      for (int g = e.field_groups_size() - 1; g >= 0; --g) {
        const storage::FieldGroup& group = e.field_groups(g);
        Sample* sample = series->add_samples();
        sample->set_timestamp_ms(group.timestamp());
        sample->set_value(group.fields(0).value().float64_value());
      }
    }
  }
}

std::vector<std::string> Generate(uint64_t seed, int count) {
  return GenerateMix(seed, count, kRemoteWriteMix, &Make,
                     WriteRequest::default_instance());
}

// What the distributor reads before forwarding: every label (hashed into a
// series id for sharding), every sample's timestamp and value.
uint64_t Walk(const google::protobuf::Message& m) {
  const auto& request = static_cast<const WriteRequest&>(m);
  uint64_t h = static_cast<uint64_t>(request.source());
  for (const TimeSeries& series : request.timeseries()) {
    uint64_t id = 0;
    for (const LabelPair& pair : series.labels()) {
      id = Mix(id, HashStr(pair.name()) ^ HashStr(pair.value()));
    }
    h = Mix(h, id);
    for (const Sample& sample : series.samples()) {
      h = Mix(h, static_cast<uint64_t>(sample.timestamp_ms()));
      h = Mix(h, static_cast<uint64_t>(sample.value()));
    }
  }
  return h;
}

// cortexpb.WriteResponse is empty: success is the OK status.
void Respond(const google::protobuf::Message&, google::protobuf::Message* r) {
  static_cast<WriteResponse*>(r)->Clear();
}

}  // namespace

Service CortexService() {
  // distributor.proto declares only the service: without a reference its
  // object file (and the file's descriptor) would not be linked in.
  static const void* volatile keep =
      &::descriptor_table_github_2ecom_2fcortexproject_2fcortex_2fpkg_2fdistributor_2fdistributorpb_2fdistributor_2eproto;
  (void)keep;
  return Service{
      .name = "cortex_push",
      .method = "/distributor.Distributor/Push",
      .proto =
          "github.com/cortexproject/cortex/pkg/distributor/distributorpb/"
          "distributor.proto",
      .request = WriteRequest::descriptor(),
      .response = WriteResponse::descriptor(),
      .shape =
          "all-repeated Prometheus remote write: ~2000 series x (9-15 "
          "{name, value} byte pairs + 1-2 samples), nothing Clear() drops",
      .sizes_from =
          "Prometheus remote_write max_samples_per_send 2000: 80% full "
          "batches (~0.8-1.0 MB), 20% deadline flushes of 100-1999",
      .generate = &Generate,
      .walk = &Walk,
      .respond = &Respond};
}

}  // namespace arenarpc::corpus::internal
