// Minimal reproduction: plain gRPC (no arenarpc code) under gcc TSan with
// Debian 12's uninstrumented libgrpc/libabsl reports data races inside
// those libraries. See docs/DESIGN_NOTES.md, "TSan and gRPC". Built (target
// tsan_grpc_repro) but not a test: under TSan it is expected to fail.
//
//   cmake -S . -B build/tsan -G Ninja -DARENARPC_SANITIZE=thread
//   cmake --build build/tsan --target tsan_grpc_repro
//   setarch $(uname -m) -R build/tsan/tests/tsan_grpc_repro  # exits 66
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <memory>

int main() {
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                     grpc::InsecureChannelCredentials());
  bool connected = channel->WaitForConnected(std::chrono::system_clock::now() +
                                             std::chrono::seconds(10));
  std::printf("connected=%d\n", connected);
  server->Shutdown();
  return 0;
}
