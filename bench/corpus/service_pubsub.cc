// google.pubsub.v1.Publisher/Publish (npm google-proto-files 5.0.3): batches
// of messages with opaque payloads and small attribute maps.
//
// Numbers: the client libraries' default batch settings (Go: CountThreshold
// 100, ByteThreshold 1e6, DelayThreshold 10 ms; Python: max_messages 100,
// max_bytes 1 MB, max_latency 10 ms) cap a request at 100 messages or ~1 MB.
// At modest rates the 10 ms delay fires first, so most requests carry one
// or a few messages; event payloads are JSON or Avro of ~0.1-4 KB.
#include <array>
#include <string>
#include <string_view>

#include "corpus_internal.h"
#include "google/pubsub/v1/pubsub.pb.h"

namespace arenarpc::corpus::internal {
namespace {

using ::google::pubsub::v1::PublishRequest;
using ::google::pubsub::v1::PublishResponse;
using ::google::pubsub::v1::PubsubMessage;

enum Kind { kSingle, kBatch, kByteThreshold };

constexpr std::array<std::string_view, 4> kTopics = {
    "projects/shop-prod/topics/order-events",
    "projects/shop-prod/topics/inventory-updates",
    "projects/shop-prod/topics/clickstream",
    "projects/shop-prod/topics/email-notifications"};

void FillMessage(Rng& rng, int data_bytes, PubsubMessage* m) {
  // 70% JSON events, 30% binary (Avro / protobuf encoded).
  m->set_data(rng.Chance(0.7) ? rng.Json(data_bytes) : rng.Bytes(data_bytes));
  auto* attributes = m->mutable_attributes();
  const int n = static_cast<int>(rng.Uniform(0, 4));
  if (n > 0) (*attributes)["eventType"] = "order.created";
  if (n > 1) (*attributes)["source"] = "checkout-service";
  if (n > 2) (*attributes)["schemaVersion"] = Cat("v", rng.Uniform(1, 5));
  if (n > 3) {
    // OpenTelemetry's Pub/Sub instrumentation propagates W3C trace context.
    (*attributes)["googclient_traceparent"] =
        Cat("00-", rng.Hex(32), "-", rng.Hex(16), "-01");
  }
  if (rng.Chance(0.2)) m->set_ordering_key(Cat("customer-", rng.Digits(8)));
}

void Make(int kind, Rng& rng, google::protobuf::Message* m) {
  auto* request = static_cast<PublishRequest*>(m);
  request->set_topic(std::string(rng.Pick(kTopics)));
  switch (kind) {
    case kSingle:
      FillMessage(rng, static_cast<int>(rng.LogUniform(100, 2000)),
                  request->add_messages());
      break;
    case kBatch: {
      const int n = static_cast<int>(rng.LogUniform(2, 100));
      for (int i = 0; i < n; ++i) {
        FillMessage(rng, static_cast<int>(rng.LogUniform(100, 4000)),
                    request->add_messages());
      }
      break;
    }
    default: {
      // Large payloads (images' metadata, documents) until the 1 MB byte
      // threshold flushes the batch.
      int bytes = 0;
      while (bytes < 1'000'000) {
        const int size = static_cast<int>(rng.LogUniform(10'000, 200'000));
        FillMessage(rng, size, request->add_messages());
        bytes += size;
      }
      break;
    }
  }
}

std::vector<std::string> Generate(uint64_t seed, int count) {
  return GenerateMix(seed, count,
                     {{kSingle, 50}, {kBatch, 49}, {kByteThreshold, 1}}, &Make,
                     PublishRequest::default_instance());
}

// What the publish front end checks before storing: topic, each message's
// size, attribute keys and values (limits: 100 attributes, 256 B keys,
// 1024 B values), and ordering keys.
uint64_t Walk(const google::protobuf::Message& m) {
  const auto& request = static_cast<const PublishRequest&>(m);
  uint64_t h = HashStr(request.topic());
  for (const PubsubMessage& message : request.messages()) {
    h = Mix(h, Touch(message.data()));
    h = Mix(h, WalkStringMap(message.attributes()));
    h = Mix(h, HashStr(message.ordering_key()));
  }
  return h;
}

// One server-assigned id per message, in order (decimal, ~16 digits).
void Respond(const google::protobuf::Message& m, google::protobuf::Message* r) {
  const auto& request = static_cast<const PublishRequest&>(m);
  auto* response = static_cast<PublishResponse*>(r);
  uint64_t id = 10'000'000'000'000'000ULL +
                HashStr(request.topic()) % 1'000'000'000'000ULL;
  for (int i = 0; i < request.messages_size(); ++i) {
    response->add_message_ids(Cat(id + static_cast<uint64_t>(i)));
  }
}

}  // namespace

Service PubsubService() {
  return Service{
      .name = "pubsub_publish",
      .method = "/google.pubsub.v1.Publisher/Publish",
      .proto = "google/pubsub/v1/pubsub.proto",
      .request = PublishRequest::descriptor(),
      .response = PublishResponse::descriptor(),
      .shape =
          "bytes-heavy: repeated message{bytes data, map<string,string> "
          "attributes, Timestamp}; repeated string response",
      .sizes_from =
          "client batch defaults 100 messages / 1 MB / 10 ms: 50% single "
          "messages, 49% batches of 2-100, 1% batches flushed at 1 MB",
      .generate = &Generate,
      .walk = &Walk,
      .respond = &Respond};
}

}  // namespace arenarpc::corpus::internal
