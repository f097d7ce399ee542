// Built against an installed arenarpc with arenarpc_grpc_generate() and the
// installed protoc-gen-arenarpc, from nested protos with an import across
// directories: a server and a client, one round trip. Exits 0 only if the
// call ran on arenarpc's arena allocator.
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <memory>
#include <string>

#include "acme/common/v1/types.pb.h"
#include "acme/orders/v1/orders.arenarpc.h"
#include "acme/orders/v1/orders.grpc.pb.h"
#include "arenarpc/grpc/stats.h"

namespace {

using acme::orders::v1::OrderService;
using acme::orders::v1::PlaceOrderRequest;
using acme::orders::v1::PlaceOrderResponse;

class Orders final : public OrderService::CallbackService {
  grpc::ServerUnaryReactor* PlaceOrder(grpc::CallbackServerContext* context,
                                       const PlaceOrderRequest* request,
                                       PlaceOrderResponse* response) override {
    int64_t units = 0;
    for (const acme::common::v1::LineItem& item : request->items()) {
      units += item.quantity() * item.price().units();
    }
    response->set_order_id("order-of-" + request->customer());
    response->mutable_total()->set_currency("EUR");
    response->mutable_total()->set_units(units);
    // The request is on a pooled arena, not on the heap.
    if (request->GetArena() == nullptr) response->set_order_id("heap");
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

}  // namespace

int main() {
  Orders service;
  // The one line per service (docs/ADOPT.md).
  const arenarpc::InstallResult installed =
      acme::orders::v1::InstallOrderServiceAllocators(
          &service, arenarpc::AllocationMode::kArena);
  if (!installed.ok() || installed.served() != 1) {
    std::fprintf(stderr, "%s\n", installed.ToString().c_str());
    return 1;
  }
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) return 2;

  auto stub = OrderService::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  PlaceOrderRequest request;
  request.set_customer("ada");
  acme::common::v1::LineItem* item = request.add_items();
  item->set_sku("tea");
  item->set_quantity(3);
  item->mutable_price()->set_units(4);
  PlaceOrderResponse response;
  grpc::ClientContext context;
  const grpc::Status status = stub->PlaceOrder(&context, request, &response);
  server->Shutdown();
  if (!status.ok()) {
    std::fprintf(stderr, "call failed: %s\n", status.error_message().c_str());
    return 3;
  }
  if (response.order_id() != "order-of-ada" || response.total().units() != 12) {
    return 4;
  }
  const arenarpc::GrpcStats stats = arenarpc::GetGrpcStats();
  if (stats.modes[static_cast<int>(arenarpc::AllocationMode::kArena)].calls !=
      1) {
    return 5;
  }
  const std::string text = arenarpc::RenderPrometheusStats();
  if (text.find("arenarpc_grpc_calls_total{mode=\"arena\"} 1") ==
          std::string::npos ||
      text.find("arenarpc_page_pool_pages_in_use") == std::string::npos) {
    return 6;
  }
  std::puts("grpc consumer ok");
  return 0;
}
