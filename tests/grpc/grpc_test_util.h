// Helpers of the gRPC tests: an echo server on 127.0.0.1 with a mode, and
// waiting (bounded) for asynchronous releases.
#ifndef ARENARPC_TESTS_GRPC_GRPC_TEST_UTIL_H_
#define ARENARPC_TESTS_GRPC_GRPC_TEST_UTIL_H_

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "arenarpc/grpc/install.h"
#include "arenarpc/grpc/stats.h"
#include "echo_service.h"

namespace arenarpc::testing {

// For INSTANTIATE_TEST_SUITE_P over every allocation mode, named by mode:
//   INSTANTIATE_TEST_SUITE_P(Modes, MyTest, AllModes(), ModeTestName);
inline auto AllModes() {
  return ::testing::Values(AllocationMode::kHeap, AllocationMode::kArena,
                           AllocationMode::kReuse, AllocationMode::kAuto);
}
inline std::string ModeTestName(
    const ::testing::TestParamInfo<AllocationMode>& info) {
  return std::string(AllocationModeName(info.param));
}

// A mode's call counters; kAuto's calls are counted under the mode each
// call ran in, so for kAuto these are the sums over all modes.
inline GrpcModeStats ModeStats(AllocationMode mode) {
  const GrpcStats s = GetGrpcStats();
  if (mode != AllocationMode::kAuto) return s.modes[static_cast<int>(mode)];
  GrpcModeStats sum;
  for (const GrpcModeStats& m : s.modes) {
    sum.calls += m.calls;
    sum.in_flight += m.in_flight;
    sum.free_request_calls += m.free_request_calls;
    sum.arena_bytes_sum += m.arena_bytes_sum;
  }
  return sum;
}

// Polls `done` until it holds or `limit` passed. gRPC releases a call's
// messages after the client saw its status, so tests wait for counters
// instead of reading them at once. Not a timing assertion: the limit only
// bounds a hang.
inline bool WaitFor(const std::function<bool()>& done,
                    std::chrono::seconds limit = std::chrono::seconds(30)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

inline uint64_t InFlight(AllocationMode mode) {
  return ModeStats(mode).in_flight;
}
inline uint64_t Calls(AllocationMode mode) { return ModeStats(mode).calls; }

// A unary call of `method` ("/pkg.Service/Method") whose request is `bytes`
// as they are (malformed ones included), waited for; its status.
inline grpc::Status CallWithBytes(const std::shared_ptr<grpc::Channel>& channel,
                                  const std::string& method,
                                  const std::string& bytes) {
  grpc::GenericStub generic(channel);
  grpc::Slice slice(bytes);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  grpc::ClientContext context;
  // The deadline bounds a hang; the callback always runs.
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(60));
  std::promise<grpc::Status> done;
  generic.UnaryCall(&context, method, grpc::StubOptions(), &request, &response,
                    [&](grpc::Status s) { done.set_value(std::move(s)); });
  return done.get_future().get();
}

// The measuring stats of `method` (empty if it is not measured).
inline MeasuredMethodStats MeasuredStatsOf(const std::string& method) {
  for (const MeasuredMethodStats& s : GetMeasuredMethodStats()) {
    if (s.method == method) return s;
  }
  return {};
}

// kAuto, every call allowed to be a trial (share 1.0).
inline ServerOptions RealCallsOptions() {
  ServerOptions options(AllocationMode::kAuto);
  options.automatic.max_cpu_share = 1.0;
  return options;
}

// A server on 127.0.0.1, a free port (*port), serving `service`; `more`
// adds to the builder (a completion queue, limits) before it is built.
inline std::unique_ptr<grpc::Server> StartLocalServer(
    grpc::Service* service, int* port,
    const std::function<void(grpc::ServerBuilder&)>& more = {}) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           port);
  builder.RegisterService(service);
  if (more) more(builder);
  return builder.BuildAndStart();
}

// A channel to `target` with a connection of its own (not shared with other
// channels), taking messages up to 64 MiB.
inline std::shared_ptr<grpc::Channel> NewTestChannel(
    const std::string& target) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  args.SetMaxSendMessageSize(64 << 20);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(),
                                   args);
}

// A started server of `service` on 127.0.0.1 and an echo stub on a channel
// of its own.
struct LocalEcho {
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<echo::EchoService::Stub> stub;
};
inline LocalEcho StartLocalEcho(grpc::Service* service) {
  LocalEcho local;
  int port = 0;
  local.server = StartLocalServer(service, &port);
  if (local.server != nullptr) {
    local.stub = echo::EchoService::NewStub(
        NewTestChannel("127.0.0.1:" + std::to_string(port)));
  }
  return local;
}

// An async echo server on 127.0.0.1: `first` requests the first call
// (the user's first CallData), then one thread runs `serve` (the
// completion-queue loop) until the queue is shut down and drained.
class AsyncEchoQueue {
 public:
  using First = std::function<void(echo::EchoService::AsyncService*,
                                   grpc::ServerCompletionQueue*)>;
  using Serve = std::function<void(grpc::ServerCompletionQueue*)>;
  AsyncEchoQueue(const First& first, Serve serve,
                 int max_receive_bytes = 4 << 20) {
    server_ = StartLocalServer(&service_, &port_, [&](grpc::ServerBuilder& b) {
      b.SetMaxReceiveMessageSize(max_receive_bytes);
      cq_ = b.AddCompletionQueue();
    });
    EXPECT_NE(server_, nullptr);
    if (server_ == nullptr) return;
    first(&service_, cq_.get());
    poller_ =
        std::thread([this, serve = std::move(serve)] { serve(cq_.get()); });
    stub_ = echo::EchoService::NewStub(NewTestChannel(target()));
  }
  ~AsyncEchoQueue() { Shutdown(std::chrono::milliseconds(0)); }

  // Shuts the server down (calls in flight get `grace`), then the queue;
  // returns when `serve` did.
  void Shutdown(std::chrono::milliseconds grace) {
    if (server_ == nullptr) return;
    server_->Shutdown(std::chrono::system_clock::now() + grace);
    cq_->Shutdown();
    poller_.join();
    server_.reset();
  }

  std::string target() const { return "127.0.0.1:" + std::to_string(port_); }
  echo::EchoService::Stub& stub() { return *stub_; }

 private:
  echo::EchoService::AsyncService service_;
  int port_ = 0;
  std::unique_ptr<grpc::ServerCompletionQueue> cq_;
  std::unique_ptr<grpc::Server> server_;
  std::thread poller_;
  std::unique_ptr<echo::EchoService::Stub> stub_;
};

// Echo server on 127.0.0.1, a free port, with `options` (or a mode)
// installed on the service of `api` (callback: EchoServiceImpl, sync:
// EchoSyncServiceImpl).
class EchoServer {
 public:
  explicit EchoServer(const ServerOptions& options,
                      int max_receive_bytes = 4 << 20,
                      ServerApi api = ServerApi::kCallback)
      : api_(api) {
    const InstallResult r =
        api == ServerApi::kSync
            ? echo::InstallEchoServiceAllocators(&sync_service_, options)
            : echo::InstallEchoServiceAllocators(&service_, options);
    EXPECT_TRUE(r.ok()) << r.ToString();
    EXPECT_EQ(r.served(), 1) << r.ToString();
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.SetMaxReceiveMessageSize(max_receive_bytes);
    if (api == ServerApi::kSync) {
      builder.RegisterService(&sync_service_);
    } else {
      builder.RegisterService(&service_);
    }
    server_ = builder.BuildAndStart();
    EXPECT_NE(server_, nullptr);
    EXPECT_NE(port_, 0);
  }
  ~EchoServer() { Shutdown(std::chrono::milliseconds(0)); }

  // Shuts down (calls in flight get `grace`), then stops the finisher.
  void Shutdown(std::chrono::milliseconds grace) {
    if (server_ == nullptr) return;
    server_->Shutdown(std::chrono::system_clock::now() + grace);
    service_.Stop();
    server_->Wait();
    server_.reset();
  }

  ServerApi api() const { return api_; }
  std::string target() const { return "127.0.0.1:" + std::to_string(port_); }
  std::shared_ptr<grpc::Channel> NewChannel() const {
    return NewTestChannel(target());
  }

  const echo::EchoSyncServiceImpl& sync_service() const {
    return sync_service_;
  }

 private:
  const ServerApi api_;
  echo::EchoServiceImpl service_;
  echo::EchoSyncServiceImpl sync_service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace arenarpc::testing

#endif  // ARENARPC_TESTS_GRPC_GRPC_TEST_UTIL_H_
