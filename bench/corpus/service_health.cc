// grpc.health.v1.Health/Check (Debian grpc-proto): the smallest RPC there
// is. Callers are probes and load balancers, polling every few seconds.
#include <array>
#include <string_view>

#include "corpus_internal.h"
#include "grpc/health/v1/health.pb.h"

namespace arenarpc::corpus::internal {
namespace {

using ::grpc::health::v1::HealthCheckRequest;
using ::grpc::health::v1::HealthCheckResponse;

enum Kind { kServer, kNamed };

// Service names as gRPC client-side health checking and Envoy's
// grpc_health_check send them (the configured service_name).
constexpr std::array<std::string_view, 6> kNames = {
    "grpc.health.v1.Health",
    "opentelemetry.proto.collector.trace.v1.TraceService",
    "google.pubsub.v1.Publisher",
    "etcdserverpb.KV",
    "shop.checkout.v1.CheckoutService",
    "readiness"};

void Make(int kind, Rng& rng, google::protobuf::Message* m) {
  auto* request = static_cast<HealthCheckRequest*>(m);
  // kServer: "" asks about the whole server, the default of Kubernetes'
  // gRPC probes and grpc_health_probe: an empty (0-byte) message.
  if (kind == kNamed) request->set_service(std::string(rng.Pick(kNames)));
}

std::vector<std::string> Generate(uint64_t seed, int count) {
  // No large requests exist: the only field is a service name.
  return GenerateMix(seed, count, {{kServer, 70}, {kNamed, 30}}, &Make,
                     HealthCheckRequest::default_instance());
}

uint64_t Walk(const google::protobuf::Message& m) {
  const auto& request = static_cast<const HealthCheckRequest&>(m);
  // A health servicer looks the name up in its status map.
  return HashStr(request.service());
}

void Respond(const google::protobuf::Message& /*request*/,
             google::protobuf::Message* m) {
  static_cast<HealthCheckResponse*>(m)->set_status(
      HealthCheckResponse::SERVING);
}

}  // namespace

Service HealthService() {
  return Service{
      .name = "health",
      .method = "/grpc.health.v1.Health/Check",
      .proto = "grpc/health/v1/health.proto",
      .request = HealthCheckRequest::descriptor(),
      .response = HealthCheckResponse::descriptor(),
      .shape =
          "tiny proto3 messages: one string, usually empty (0-60 B); "
          "an enum response",
      .sizes_from =
          "Kubernetes gRPC probes / grpc_health_probe send service "
          "\"\" (70%); LB and client-side health checks name a "
          "service (30%)",
      .generate = &Generate,
      .walk = &Walk,
      .respond = &Respond};
}

}  // namespace arenarpc::corpus::internal
