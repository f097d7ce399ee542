// GenericStubs: `n` generic stubs to one target, each on its own channel
// (a distinct channel argument, so gRPC opens one TCP connection each), with
// no limit on the response size. The load clients' connections
// (capacity_client.cc, reliability/load_client.cc): they send and receive
// raw bytes, never a message of the service.
#ifndef ARENARPC_BENCH_CAPACITY_GENERIC_STUBS_H_
#define ARENARPC_BENCH_CAPACITY_GENERIC_STUBS_H_

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

namespace arenarpc::bench {

inline std::vector<std::unique_ptr<grpc::GenericStub>> GenericStubs(
    const std::string& target, int n) {
  std::vector<std::unique_ptr<grpc::GenericStub>> stubs;
  for (int i = 0; i < n; ++i) {
    grpc::ChannelArguments args;
    args.SetInt("arenarpc.bench.channel", i);  // distinct: a connection each
    args.SetMaxReceiveMessageSize(-1);
    stubs.push_back(
        std::make_unique<grpc::GenericStub>(grpc::CreateCustomChannel(
            target, grpc::InsecureChannelCredentials(), args)));
  }
  return stubs;
}

}  // namespace arenarpc::bench

#endif  // ARENARPC_BENCH_CAPACITY_GENERIC_STUBS_H_
