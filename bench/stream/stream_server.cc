// arenarpc_stream_server: a client-streaming OTLP metrics service
// (stream_bench.proto), plain gRPC or on arenarpc's StreamMessages, sync or
// callback API. Each message is parsed by gRPC into the handler's object and
// walked as a metrics backend would (the corpus walk).
//
//   arenarpc_stream_server --port=0 --mode=plain --api=sync
//   # "listening on 127.0.0.1:N"; SIGTERM/SIGINT: shut down, exit 0
//
// --mode=plain: no arenarpc, as gRPC's route_guide writes a reader (one
// message object declared before the Read loop, parsed into again and
// again); heap|arena|reuse|auto: the same loop reading into
// StreamMessages::Next().
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "arenarpc/grpc/stats.h"
#include "arenarpc/grpc/streaming.h"
#include "corpus.h"
#include "stream_bench.grpc.pb.h"

ABSL_FLAG(int, port, 0, "port to listen on; 0 picks a free port");
ABSL_FLAG(std::string, mode, "plain", "plain, heap, arena, reuse or auto");
ABSL_FLAG(std::string, api, "sync", "sync or callback");

namespace {

using Request =
    opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest;
using arenarpc::streambench::Ack;
using arenarpc::streambench::StreamBench;

constexpr char kMethod[] = "arenarpc.streambench.StreamBench/Ingest";

uint64_t Walk(const Request& r) {
  static const arenarpc::corpus::Service* const s =
      arenarpc::corpus::FindService("otlp_metrics");
  return s->walk(r);
}

void Count(const Request& r, Ack* ack) {
  ack->set_messages(ack->messages() + 1);
  ack->set_checksum(ack->checksum() * 31 + Walk(r));
}

// Plain gRPC, sync API (route_guide's RecordRoute).
class PlainSync final : public StreamBench::Service {
  grpc::Status Ingest(grpc::ServerContext*, grpc::ServerReader<Request>* reader,
                      Ack* ack) override {
    Request request;
    while (reader->Read(&request)) Count(request, ack);
    return grpc::Status::OK;
  }
};

// The same on StreamMessages: the one changed line.
class PooledSync final : public StreamBench::Service {
 public:
  explicit PooledSync(arenarpc::StreamMethod<Request, Ack>* m) : m_(m) {}
  grpc::Status Ingest(grpc::ServerContext*, grpc::ServerReader<Request>* reader,
                      Ack* ack) override {
    arenarpc::StreamMessages<Request> requests = m_->Requests();
    while (reader->Read(requests.Next())) Count(*requests, ack);
    return grpc::Status::OK;
  }

 private:
  arenarpc::StreamMethod<Request, Ack>* const m_;
};

// Callback API: a reader reactor, plain (a member message) or pooled.
class Callback final : public StreamBench::CallbackService {
 public:
  explicit Callback(arenarpc::StreamMethod<Request, Ack>* m) : m_(m) {}
  grpc::ServerReadReactor<Request>* Ingest(grpc::CallbackServerContext*,
                                           Ack* ack) override {
    class Reader : public grpc::ServerReadReactor<Request> {
     public:
      Reader(arenarpc::StreamMethod<Request, Ack>* m, Ack* ack) : ack_(ack) {
        if (m != nullptr) pooled_.emplace(m->Requests());
        StartRead(NextMessage());
      }
      void OnReadDone(bool ok) override {
        if (!ok) return Finish(grpc::Status::OK);
        Count(pooled_ ? **pooled_ : plain_, ack_);
        StartRead(NextMessage());
      }
      void OnDone() override { delete this; }

     private:
      Request* NextMessage() { return pooled_ ? pooled_->Next() : &plain_; }
      Ack* const ack_;
      Request plain_;
      std::optional<arenarpc::StreamMessages<Request>> pooled_;
    };
    return new Reader(m_, ack);
  }

 private:
  arenarpc::StreamMethod<Request, Ack>* const m_;
};

std::atomic<bool> g_stop{false};

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const std::string mode_name = absl::GetFlag(FLAGS_mode);
  const bool sync = absl::GetFlag(FLAGS_api) == "sync";
  std::unique_ptr<arenarpc::StreamMethod<Request, Ack>> method;
  if (mode_name != "plain") {
    absl::StatusOr<arenarpc::AllocationMode> mode =
        arenarpc::ParseAllocationMode(mode_name);
    if (!mode.ok()) {
      std::fprintf(stderr, "%s\n",
                   std::string(mode.status().message()).c_str());
      return 2;
    }
    method = std::make_unique<arenarpc::StreamMethod<Request, Ack>>(
        kMethod, *mode,
        sync ? arenarpc::ServerApi::kSync : arenarpc::ServerApi::kCallback);
  }
  PlainSync plain_sync;
  PooledSync pooled_sync(method.get());
  Callback callback(method.get());
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(
      "127.0.0.1:" + std::to_string(absl::GetFlag(FLAGS_port)),
      grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(64 << 20);
  if (!sync) {
    builder.RegisterService(&callback);
  } else if (method != nullptr) {
    builder.RegisterService(&pooled_sync);
  } else {
    builder.RegisterService(&plain_sync);
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) return 1;
  std::printf("listening on 127.0.0.1:%d\n", port);
  std::fflush(stdout);
  signal(SIGTERM, [](int) { g_stop = true; });
  signal(SIGINT, [](int) { g_stop = true; });
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  server->Shutdown(std::chrono::system_clock::now());
  server->Wait();
  if (method != nullptr) {
    const arenarpc::StreamTotals t = arenarpc::GetStreamTotals();
    std::fprintf(
        stderr,
        "streams %llu, messages heap %llu arena %llu reuse %llu, "
        "arena resets %llu, sampled %llu\n",
        (unsigned long long)t.streams_opened, (unsigned long long)t.messages[0],
        (unsigned long long)t.messages[1], (unsigned long long)t.messages[2],
        (unsigned long long)t.arena_resets, (unsigned long long)t.sampled);
    for (const arenarpc::MeasuredMethodStats& m :
         arenarpc::GetAutoMethodStats()) {
      std::fprintf(stderr, "auto: %s chose %s\n", m.method.c_str(),
                   std::string(arenarpc::AllocationModeName(m.mode)).c_str());
    }
  }
  return 0;
}
