// arenarpc_echo_client: calls an echo server, each call's messages on a
// pooled arena or from MessagePools (arenarpc::ClientCall), and verifies
// every response. --stub picks the client API, each written as gRPC's own
// greeter clients are: callback (stub->async()->Echo, a chain of calls per
// slot), sync (blocking stub->Echo from `concurrency` threads, as
// greeter_client) or async (PrepareAsyncEcho / StartCall / Finish on one
// completion queue, as greeter_async_client2). The arenarpc lines are
// marked `arenarpc:`.
//
//   arenarpc_echo_server --port=0 &            # prints "listening on N"
//   arenarpc_echo_client --target=127.0.0.1:N --calls=1000 --concurrency=16
//   arenarpc_echo_client --target=127.0.0.1:N --stub=async --messages=reuse
//
// Exits 0 if every call succeeded with a correct echo.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "arenarpc/grpc/client.h"
#include "echo_service.h"

ABSL_FLAG(std::string, target, "127.0.0.1:50051", "server address");
ABSL_FLAG(int, calls, 100, "calls to make");
ABSL_FLAG(int, concurrency, 8, "calls in flight at once");
ABSL_FLAG(int, scale, 100, "payload scale (100: ~130 KB per message)");
ABSL_FLAG(std::string, messages, "arena",
          "client messages: arena (ClientCall on a pooled arena) or reuse "
          "(ClientCall with MessagePools)");
ABSL_FLAG(std::string, stub, "callback",
          "client API: callback, sync (blocking stub) or async (completion "
          "queue)");
ABSL_FLAG(int, stream_messages, 0,
          "also send this many messages on one EchoStream");
ABSL_FLAG(bool, check_health, false,
          "also check grpc.health.v1.Health/Check answers SERVING");
ABSL_FLAG(bool, check_reflection, false,
          "also check server reflection lists arenarpc.echo.EchoService");

namespace {

using arenarpc::echo::EchoRequest;
using arenarpc::echo::EchoResponse;
using arenarpc::echo::EchoService;

class Runner {
 public:
  Runner(EchoService::Stub* stub, int calls, int scale, bool reuse)
      : stub_(stub), calls_(calls), scale_(scale), reuse_(reuse) {}
  // The pools must outlive every call's release: Then() hands the pooled
  // messages back on a gRPC thread right *after* the last callback said it
  // was done, so Run() returning does not mean they are back yet.
  ~Runner() {
    while (requests_.Stats().in_use + responses_.Stats().in_use != 0) {
      std::this_thread::yield();
    }
  }

  // Starts `concurrency` chains of calls; each completion starts the next.
  void Run(int concurrency) {
    for (int i = 0; i < concurrency; ++i) StartNext();
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return done_ == calls_; });
  }
  int failures() const { return failures_.load(); }

 private:
  void StartNext() {
    const int index = started_.fetch_add(1);
    if (index >= calls_) return;
    auto call = reuse_ ? arenarpc::ClientCall<EchoRequest, EchoResponse>(
                             requests_, responses_)
                       : arenarpc::ClientCall<EchoRequest, EchoResponse>();
    arenarpc::echo::BuildEchoRequest(scale_, index, call.request());
    const EchoRequest* request = call.request();
    stub_->async()->Echo(call.context(), call.request(), call.response(),
                         call.Then([this, request](const grpc::Status& status,
                                                   EchoResponse* response) {
                           std::string why;
                           if (!status.ok()) {
                             why = "status " + status.error_message();
                           } else if (arenarpc::echo::VerifyEchoResponse(
                                          *request, *response, &why)) {
                             why.clear();
                           }
                           if (!why.empty()) {
                             if (failures_.fetch_add(1) < 5) {
                               std::fprintf(stderr, "call failed: %s\n",
                                            why.c_str());
                             }
                           }
                           StartNext();
                           std::lock_guard<std::mutex> lock(mu_);
                           if (++done_ == calls_) cv_.notify_all();
                         }));
  }

  EchoService::Stub* const stub_;
  const int calls_;
  const int scale_;
  const bool reuse_;
  arenarpc::MessagePool<EchoRequest> requests_;
  arenarpc::MessagePool<EchoResponse> responses_;
  std::atomic<int> started_{0};
  std::atomic<int> failures_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  int done_ = 0;
};

// One failed call's message, the first few only.
void Report(std::atomic<int>* failures, const grpc::Status& status,
            const EchoRequest& request, const EchoResponse& response) {
  std::string why;
  if (!status.ok()) {
    why = "status " + status.error_message();
  } else if (arenarpc::echo::VerifyEchoResponse(request, response, &why)) {
    return;
  }
  if (failures->fetch_add(1) < 5) {
    std::fprintf(stderr, "call failed: %s\n", why.c_str());
  }
}

using Call = arenarpc::ClientCall<EchoRequest, EchoResponse>;

// Blocking stub calls from `concurrency` threads (gRPC's greeter_client,
// threaded). The scope frees context and messages when it ends.
int RunSync(EchoService::Stub* stub, int calls, int concurrency, int scale,
            bool reuse) {
  arenarpc::MessagePool<EchoRequest> requests;
  arenarpc::MessagePool<EchoResponse> responses;
  std::atomic<int> next{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < concurrency; ++t) {
    threads.emplace_back([&] {
      for (int i = next++; i < calls; i = next++) {
        // arenarpc: was `ClientContext context; EchoRequest request;
        // EchoResponse response;`
        Call call = reuse ? Call(requests, responses) : Call();
        arenarpc::echo::BuildEchoRequest(scale, i, call.request());
        grpc::Status status =
            stub->Echo(call.context(), *call.request(), call.response());
        Report(&failures, status, *call.request(), *call.response());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return failures.load();
}

// Async stub calls on one completion queue, `concurrency` in flight (gRPC's
// greeter_async_client2). The scope lives in the call's state until
// Finish's tag: gRPC parses the response into it in place.
int RunAsync(EchoService::Stub* stub, int calls, int concurrency, int scale,
             bool reuse) {
  arenarpc::MessagePool<EchoRequest> requests;
  arenarpc::MessagePool<EchoResponse> responses;
  struct AsyncCall {
    explicit AsyncCall(Call c) : call(std::move(c)) {}
    Call call;  // arenarpc: was `ClientContext context; EchoResponse reply;`
    grpc::Status status;
    std::unique_ptr<grpc::ClientAsyncResponseReader<EchoResponse>> rpc;
  };
  grpc::CompletionQueue cq;
  int started = 0;
  auto start = [&] {
    auto* c = new AsyncCall(reuse ? Call(requests, responses) : Call());
    arenarpc::echo::BuildEchoRequest(scale, started++, c->call.request());
    c->rpc = stub->PrepareAsyncEcho(c->call.context(), *c->call.request(), &cq);
    c->rpc->StartCall();
    c->rpc->Finish(c->call.response(), &c->status, c);
  };
  for (int i = 0; i < concurrency && started < calls; ++i) start();
  std::atomic<int> failures{0};
  void* tag;
  bool ok = false;
  // Until every started call is back (none in flight: nothing to wait for).
  for (int done = 0; done < started && cq.Next(&tag, &ok);) {
    auto* c = static_cast<AsyncCall*>(tag);
    Report(
        &failures,
        ok ? c->status
           : grpc::Status(grpc::StatusCode::UNKNOWN, "completion queue: !ok"),
        *c->call.request(), *c->call.response());
    delete c;  // context and messages back to their arena or pools
    ++done;
    if (started < calls) start();
  }
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  return failures.load();
}

int RunStream(EchoService::Stub* stub, int messages, int scale) {
  grpc::ClientContext context;
  auto stream = stub->EchoStream(&context);
  int failures = 0;
  for (int i = 0; i < messages; ++i) {
    EchoRequest request;
    arenarpc::echo::BuildEchoRequest(scale, 1000 + i, &request);
    EchoResponse response;
    std::string why;
    if (!stream->Write(request) || !stream->Read(&response) ||
        !arenarpc::echo::VerifyEchoResponse(request, response, &why)) {
      std::fprintf(stderr, "stream message %d failed %s\n", i, why.c_str());
      ++failures;
      break;
    }
  }
  stream->WritesDone();
  grpc::Status status = stream->Finish();
  if (!status.ok()) {
    std::fprintf(stderr, "stream: %s\n", status.error_message().c_str());
    ++failures;
  }
  return failures;
}

// Without the health/reflection .protos (Debian ships no client headers for
// them): hand-encoded messages on a generic stub.
int CheckHealth(const std::shared_ptr<grpc::Channel>& channel) {
  grpc::GenericStub generic(channel);
  grpc::ByteBuffer request;  // HealthCheckRequest{} is empty
  grpc::Slice empty("");
  request = grpc::ByteBuffer(&empty, 1);
  grpc::ByteBuffer response;
  grpc::ClientContext context;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  grpc::Status status;
  generic.UnaryCall(&context, "/grpc.health.v1.Health/Check",
                    grpc::StubOptions(), &request, &response,
                    [&](grpc::Status s) {
                      std::lock_guard<std::mutex> lock(mu);
                      status = std::move(s);
                      done = true;
                      cv.notify_all();
                    });
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done; });
  std::vector<grpc::Slice> slices;
  std::string bytes;
  if (status.ok() && response.Dump(&slices).ok()) {
    for (const grpc::Slice& s : slices) {
      bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
  }
  if (bytes != std::string("\x08\x01", 2)) {  // status: SERVING
    std::fprintf(stderr, "health check failed: %s\n",
                 status.error_message().c_str());
    return 1;
  }
  std::printf("health: SERVING\n");
  return 0;
}

int CheckReflection(const std::shared_ptr<grpc::Channel>& channel) {
  grpc::GenericStub generic(channel);
  grpc::CompletionQueue cq;
  grpc::ClientContext context;
  auto call = generic.PrepareCall(
      &context,
      "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &cq);
  auto wait = [&cq] {
    void* tag;
    bool ok = false;
    return cq.Next(&tag, &ok) && ok;
  };
  grpc::Slice list_services(std::string("\x3a\x00", 2));  // list_services: ""
  grpc::ByteBuffer request(&list_services, 1);
  grpc::ByteBuffer response;
  bool ok = true;
  call->StartCall(nullptr);
  ok = ok && wait();
  call->Write(request, nullptr);
  ok = ok && wait();
  call->Read(&response, nullptr);
  ok = ok && wait();
  call->WritesDone(nullptr);
  wait();
  grpc::Status status;
  call->Finish(&status, nullptr);
  wait();
  std::vector<grpc::Slice> slices;
  std::string bytes;
  if (ok && response.Dump(&slices).ok()) {
    for (const grpc::Slice& s : slices) {
      bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
  }
  cq.Shutdown();
  void* tag;
  bool ignored;
  while (cq.Next(&tag, &ignored)) {
  }
  if (bytes.find("arenarpc.echo.EchoService") == std::string::npos) {
    std::fprintf(stderr, "reflection does not list the service\n");
    return 1;
  }
  std::printf("reflection: lists arenarpc.echo.EchoService\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const std::string messages = absl::GetFlag(FLAGS_messages);
  if (messages != "arena" && messages != "reuse") {
    std::fprintf(stderr, "--messages: arena or reuse\n");
    return 2;
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  auto channel = grpc::CreateCustomChannel(
      absl::GetFlag(FLAGS_target), grpc::InsecureChannelCredentials(), args);
  auto stub = EchoService::NewStub(channel);

  const int calls = absl::GetFlag(FLAGS_calls);
  const int concurrency = absl::GetFlag(FLAGS_concurrency);
  const int scale = absl::GetFlag(FLAGS_scale);
  const bool reuse = messages == "reuse";
  const std::string api = absl::GetFlag(FLAGS_stub);
  int failures = 0;
  if (api == "sync") {
    failures = RunSync(stub.get(), calls, concurrency, scale, reuse);
  } else if (api == "async") {
    failures = RunAsync(stub.get(), calls, concurrency, scale, reuse);
  } else if (api == "callback") {
    Runner runner(stub.get(), calls, scale, reuse);
    runner.Run(concurrency);
    failures = runner.failures();
  } else {
    std::fprintf(stderr, "--stub: callback, sync or async\n");
    return 2;
  }
  if (absl::GetFlag(FLAGS_stream_messages) > 0) {
    failures += RunStream(stub.get(), absl::GetFlag(FLAGS_stream_messages),
                          absl::GetFlag(FLAGS_scale));
  }
  if (absl::GetFlag(FLAGS_check_health)) failures += CheckHealth(channel);
  if (absl::GetFlag(FLAGS_check_reflection))
    failures += CheckReflection(channel);
  std::printf("%d calls (%s stub, %s messages), %d failures\n", calls,
              api.c_str(), messages.c_str(), failures);
  return failures == 0 ? 0 : 1;
}
