// A third-party service (etcd's KV, five unary methods) implemented the way
// a service being moved to the callback API is: Txn on the callback API,
// the others still sync. One generated line serves all five, each on its
// own API, and calls to both kinds work in every mode.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "arenarpc/grpc/install.h"
#include "arenarpc/grpc/stats.h"
#include "etcd/etcdserver/etcdserverpb/rpc.arenarpc.h"

namespace arenarpc {
namespace {

using ::etcdserverpb::KV;

class MixedKv final : public KV::WithCallbackMethod_Txn<KV::Service> {
 public:
  grpc::Status Range(grpc::ServerContext*,
                     const ::etcdserverpb::RangeRequest* request,
                     ::etcdserverpb::RangeResponse* response) override {
    response->set_count(static_cast<int64_t>(request->key().size()));
    response->add_kvs()->set_key(request->key());
    return grpc::Status::OK;
  }
  grpc::ServerUnaryReactor* Txn(
      grpc::CallbackServerContext* context,
      const ::etcdserverpb::TxnRequest* request,
      ::etcdserverpb::TxnResponse* response) override {
    response->set_succeeded(request->compare_size() == 2);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

class MixedServiceTest : public ::testing::TestWithParam<AllocationMode> {};

TEST_P(MixedServiceTest, EveryUnaryMethodServedOnItsOwnApi) {
  MixedKv service;
  const InstallResult r =
      ::etcdserverpb::InstallKVAllocators(&service, GetParam());
  ASSERT_TRUE(r.ok()) << r.ToString();
  EXPECT_EQ(r.unary_methods(), 5);
  EXPECT_EQ(r.served(), 5) << r.ToString();
  for (const MethodInstall& m : r.methods()) {
    EXPECT_TRUE(m.served) << m.method;
    EXPECT_EQ(m.api, m.method == "etcdserverpb.KV/Txn" ? ServerApi::kCallback
                                                       : ServerApi::kSync)
        << m.method;
  }

  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  auto stub = KV::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  for (int i = 0; i < 20; ++i) {
    grpc::ClientContext range_context;
    ::etcdserverpb::RangeRequest range;
    range.set_key("key-" + std::to_string(i));
    ::etcdserverpb::RangeResponse range_response;
    ASSERT_TRUE(stub->Range(&range_context, range, &range_response).ok());
    EXPECT_EQ(range_response.count(), static_cast<int64_t>(range.key().size()));
    ASSERT_EQ(range_response.kvs_size(), 1);
    EXPECT_EQ(range_response.kvs(0).key(), range.key());

    grpc::ClientContext txn_context;
    ::etcdserverpb::TxnRequest txn;
    txn.add_compare()->set_key("a");
    txn.add_compare()->set_key("b");
    ::etcdserverpb::TxnResponse txn_response;
    ASSERT_TRUE(stub->Txn(&txn_context, txn, &txn_response).ok());
    EXPECT_TRUE(txn_response.succeeded());
  }
  // A method the service leaves to gRPC's default answers as without us.
  grpc::ClientContext put_context;
  ::etcdserverpb::PutResponse put_response;
  EXPECT_EQ(stub->Put(&put_context, ::etcdserverpb::PutRequest(), &put_response)
                .error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
  server->Shutdown();
  const GrpcStats s = GetGrpcStats();
  EXPECT_EQ(s.sync_parked, 0u);
  for (const GrpcModeStats& m : s.modes) EXPECT_EQ(m.in_flight, 0u);
}

INSTANTIATE_TEST_SUITE_P(Modes, MixedServiceTest,
                         ::testing::Values(AllocationMode::kHeap,
                                           AllocationMode::kArena,
                                           AllocationMode::kReuse,
                                           AllocationMode::kAuto),
                         [](const auto& info) {
                           return std::string(AllocationModeName(info.param));
                         });

}  // namespace
}  // namespace arenarpc
