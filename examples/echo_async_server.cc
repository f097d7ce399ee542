// arenarpc_echo_async_server: the echo service on gRPC's async
// completion-queue API, written as gRPC's async greeter writes it (a
// ServerImpl, a CallData state machine per call, a loop on the queue), with
// the changes arenarpc asks of such a server (marked "arenarpc:"): the
// call's messages from an AsyncMethod, and for auto to learn on the real
// calls, three lines (NextTag, Arrived, Answered; without them auto stays
// on arena).
//
//   arenarpc_echo_async_server --port=0 --mode=auto   # "listening on N"
//   arenarpc_echo_async_server --mode=none            # plain gRPC
//   ghz --insecure --call arenarpc.echo.EchoService.Echo -d '{}' 127.0.0.1:N
//
// Echo requests are the large, allocation-heavy messages of the examples
// (~130 KB at scale 100, ~11,000 byte fields). EchoStream is not served here
// (see arenarpc_echo_server). SIGTERM or SIGINT shuts the server down, prints
// the stats in Prometheus text format to stdout and exits 0.
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "arenarpc/grpc/async.h"
#include "arenarpc/grpc/stats.h"
#include "echo_service.h"

ABSL_FLAG(std::string, host, "127.0.0.1", "address to listen on");
ABSL_FLAG(int, port, 50051, "port to listen on; 0 picks a free port");
ABSL_FLAG(std::string, mode, "auto",
          "none (plain gRPC messages), heap, arena, reuse or auto");
ABSL_FLAG(int, cqs, 2, "completion queues, a thread each");
ABSL_FLAG(int, max_receive_bytes, 4 << 20, "largest request accepted");
ABSL_FLAG(int, shutdown_grace_ms, 5000,
          "on SIGTERM/SIGINT, time given to calls in flight");

namespace {

using arenarpc::echo::EchoRequest;
using arenarpc::echo::EchoResponse;
using arenarpc::echo::EchoService;

class ServerImpl {
 public:
  // arenarpc: one AsyncMethod per method, made before the server starts
  // (it is the method's install; null runs plain gRPC messages).
  explicit ServerImpl(
      std::unique_ptr<arenarpc::AsyncMethod<EchoRequest, EchoResponse>> echo)
      : echo_(std::move(echo)) {}

  ~ServerImpl() {
    if (server_ == nullptr) return;
    server_->Shutdown(
        std::chrono::system_clock::now() +
        std::chrono::milliseconds(absl::GetFlag(FLAGS_shutdown_grace_ms)));
    // Always after the server: the queues then drain every pending tag.
    for (auto& queue : queues_) {
      std::lock_guard<std::mutex> lock(queue->mu);
      queue->shut = true;
      queue->cq->Shutdown();
    }
    for (std::thread& t : threads_) t.join();
  }

  // Starts the server; returns the port (0: failed).
  int Start() {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::reflection::InitProtoReflectionServerBuilderPlugin();
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort(
        absl::StrCat(absl::GetFlag(FLAGS_host), ":", absl::GetFlag(FLAGS_port)),
        grpc::InsecureServerCredentials(), &port);
    builder.SetMaxReceiveMessageSize(absl::GetFlag(FLAGS_max_receive_bytes));
    builder.RegisterService(&service_);
    for (int i = 0; i < absl::GetFlag(FLAGS_cqs); ++i) {
      queues_.push_back(std::make_unique<Queue>());
      queues_.back()->cq = builder.AddCompletionQueue();
    }
    server_ = builder.BuildAndStart();
    if (server_ == nullptr) return 0;
    for (auto& queue : queues_) {
      new CallData(&service_, queue.get(), echo_.get());
      threads_.emplace_back([cq = queue->cq.get()] { HandleRpcs(cq); });
    }
    return port;
  }

 private:
  // A completion queue and its thread. gRPC aborts the process when an
  // operation starts on a queue after its Shutdown(), and a request that
  // arrived as the server shut down can still come out of Next() after
  // that (under load many do): operations start under `mu`, and none once
  // `shut`.
  struct Queue {
    std::unique_ptr<grpc::ServerCompletionQueue> cq;
    std::mutex mu;
    bool shut = false;  // guarded by mu
  };

  // One call: CREATE (request posted) -> PROCESS (request arrived; answer)
  // -> FINISH (answer sent; delete).
  class CallData {
   public:
    // Under queue->mu, or before the queue's thread starts.
    CallData(EchoService::AsyncService* service, Queue* queue,
             arenarpc::AsyncMethod<EchoRequest, EchoResponse>* echo)
        : service_(service), queue_(queue), echo_(echo), responder_(&ctx_) {
      // arenarpc: the call's messages from the method (pooled arena,
      // reused messages, heap, or auto's pick), taken before RequestEcho:
      // gRPC parses the request straight into this object.
      if (echo != nullptr) {
        messages_ = echo->NewCall();
        request_ = messages_.request();
        response_ = messages_.response();
      } else {
        plain_.emplace();
        request_ = &plain_->first;
        response_ = &plain_->second;
      }
      grpc::ServerCompletionQueue* cq = queue_->cq.get();
      service_->RequestEcho(&ctx_, request_, &responder_, cq, cq, this);
    }

    void Proceed(bool ok) {
      if (status_ == kFinish || !ok) {  // sent, or the server shuts down
        delete this;
        return;
      }
      // arenarpc: auto times this call from the NextTag that returned its
      // tag (first thing, on this thread) ...
      messages_.Arrived();
      std::lock_guard<std::mutex> lock(queue_->mu);
      if (queue_->shut) {  // too late to answer: gRPC cancels the call
        delete this;
        return;
      }
      new CallData(service_, queue_, echo_);  // serve the next call
      arenarpc::echo::FillResponse(*request_, response_);
      status_ = kFinish;
      responder_.Finish(*response_, grpc::Status::OK, this);
      messages_.Answered();  // arenarpc: ... to here (Finish serialized)
    }

   private:
    EchoService::AsyncService* const service_;
    Queue* const queue_;
    arenarpc::AsyncMethod<EchoRequest, EchoResponse>* const echo_;
    // arenarpc: declared before the context, so destroyed after it: the
    // messages must outlive every tag of the call (arenarpc/grpc/async.h).
    arenarpc::CallMessages<EchoRequest, EchoResponse> messages_;
    std::optional<std::pair<EchoRequest, EchoResponse>> plain_;
    EchoRequest* request_ = nullptr;
    EchoResponse* response_ = nullptr;
    grpc::ServerContext ctx_;  // one per call, never reused
    grpc::ServerAsyncResponseWriter<EchoResponse> responder_;
    enum { kProcess, kFinish } status_ = kProcess;
  };

  static void HandleRpcs(grpc::ServerCompletionQueue* cq) {
    void* tag = nullptr;
    bool ok = false;
    // arenarpc: NextTag is cq->Next, with the start of a call's window.
    while (arenarpc::NextTag(cq, &tag, &ok)) {
      static_cast<CallData*>(tag)->Proceed(ok);
    }
  }

  std::unique_ptr<arenarpc::AsyncMethod<EchoRequest, EchoResponse>> echo_;
  EchoService::AsyncService service_;
  std::vector<std::unique_ptr<Queue>> queues_;
  std::unique_ptr<grpc::Server> server_;
  std::vector<std::thread> threads_;
};

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  sigset_t signals;  // taken synchronously below; gRPC's threads inherit
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  std::unique_ptr<arenarpc::AsyncMethod<EchoRequest, EchoResponse>> echo;
  if (absl::GetFlag(FLAGS_mode) != "none") {
    absl::StatusOr<arenarpc::AllocationMode> mode =
        arenarpc::ParseAllocationMode(absl::GetFlag(FLAGS_mode));
    if (!mode.ok()) {
      std::fprintf(stderr, "%s (or none)\n", mode.status().ToString().c_str());
      return 2;
    }
    echo = std::make_unique<arenarpc::AsyncMethod<EchoRequest, EchoResponse>>(
        "arenarpc.echo.EchoService/Echo", arenarpc::ServerOptions(*mode));
    arenarpc::InstallResult installed("arenarpc.echo.EchoService");
    installed.Add(echo->report());
    std::fprintf(stderr, "%s\n", installed.ToString().c_str());
  } else {
    std::fprintf(stderr, "mode none (plain gRPC messages)\n");
  }

  int port = 0;
  {
    ServerImpl server(std::move(echo));
    port = server.Start();
    if (port == 0) {
      std::fprintf(stderr, "cannot listen on %s:%d\n",
                   absl::GetFlag(FLAGS_host).c_str(),
                   absl::GetFlag(FLAGS_port));
      return 1;
    }
    std::printf("listening on %d\n", port);
    std::fflush(stdout);
    int signal_number = 0;
    sigwait(&signals, &signal_number);
    std::fprintf(stderr, "signal %d: shutting down\n", signal_number);
  }  // ~ServerImpl: shutdown, drain, join
  std::fputs(arenarpc::RenderPrometheusStats().c_str(), stdout);
  std::fflush(stdout);
  return 0;
}
