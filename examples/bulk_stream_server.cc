// arenarpc_bulk_stream_server: a streaming service (bulk.proto: large
// batches exported, imported and synced) written as gRPC's route_guide sync
// server writes one (ServerWriter / ServerReader / ServerReaderWriter loops
// on gRPC's sync thread pool), with the lines arenarpc asks of such a
// server marked "arenarpc:".
//
//   arenarpc_bulk_stream_server --port=0 --mode=auto   # "listening on N"
//   arenarpc_bulk_stream_server --mode=none            # plain gRPC
//   arenarpc_bulk_stream_client --target=127.0.0.1:N --batches=100
//
// Each handler keeps gRPC's own loop for --mode=none, and next to it the
// same loop adopted: one StreamMethod per method (made before the server
// starts; it is the method's install, reported on stderr), and per loop a
// StreamMessages whose Next() is what Read parses into (was: one message
// declared before the loop) or what Write sends. Batches are ~130 KB at
// scale 100 (~11,000 byte fields). SIGTERM or SIGINT shuts the server down,
// prints the stats in Prometheus text format to stdout and exits 0.
#include <grpcpp/grpcpp.h>
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "arenarpc/grpc/stats.h"
#include "arenarpc/grpc/streaming.h"
#include "bulk.grpc.pb.h"
#include "bulk_batch.h"

ABSL_FLAG(std::string, host, "127.0.0.1", "address to listen on");
ABSL_FLAG(int, port, 50051, "port to listen on; 0 picks a free port");
ABSL_FLAG(std::string, mode, "auto",
          "none (plain gRPC messages), heap, arena, reuse or auto");
ABSL_FLAG(int, max_receive_bytes, 4 << 20, "largest batch accepted");
ABSL_FLAG(int, shutdown_grace_ms, 5000,
          "on SIGTERM/SIGINT, time given to streams in flight");

namespace {

using arenarpc::bulk::Batch;
using arenarpc::bulk::BulkService;
using arenarpc::bulk::ExportRequest;
using arenarpc::bulk::ImportSummary;

// Bounds on what a client may ask Export for.
constexpr uint32_t kMaxExportBatches = 1000000;
constexpr uint32_t kMaxExportScale = 1000;  // ~1.3 MB a batch

// arenarpc: one StreamMethod per streaming method, made before the server
// starts (constructing it is the method's install).
struct StreamMethods {
  explicit StreamMethods(const arenarpc::ServerOptions& options)
      : export_batches("arenarpc.bulk.BulkService/Export", options),
        import_batches("arenarpc.bulk.BulkService/Import", options),
        sync_batches("arenarpc.bulk.BulkService/Sync", options) {}
  arenarpc::StreamMethod<ExportRequest, Batch> export_batches;
  arenarpc::StreamMethod<Batch, ImportSummary> import_batches;
  arenarpc::StreamMethod<Batch, Batch> sync_batches;
};

void Tally(const Batch& batch, ImportSummary* summary) {
  summary->set_batches(summary->batches() + 1);
  summary->set_bytes(summary->bytes() + batch.ByteSizeLong());
  summary->set_checksum(arenarpc::bulk::MixChecksum(
      summary->checksum(), arenarpc::bulk::BatchChecksum(batch)));
}

class BulkServiceImpl final : public BulkService::Service {
 public:
  // `methods`: null runs gRPC's own loops (--mode=none).
  explicit BulkServiceImpl(const StreamMethods* methods) : methods_(methods) {}

  // Server-streaming: route_guide's ListFeatures.
  grpc::Status Export(grpc::ServerContext* /*context*/,
                      const ExportRequest* request,
                      grpc::ServerWriter<Batch>* writer) override {
    if (request->batches() > kMaxExportBatches ||
        request->scale() > kMaxExportScale) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          absl::StrCat("at most ", kMaxExportBatches,
                                       " batches of scale ", kMaxExportScale));
    }
    if (methods_ == nullptr) {  // gRPC's own loop
      Batch batch;
      for (uint32_t i = 0; i < request->batches(); ++i) {
        batch.Clear();
        arenarpc::bulk::FillBatch(request->scale(), i, &batch);
        if (!writer->Write(batch)) break;
      }
      return grpc::Status::OK;
    }
    // arenarpc: the stream's outgoing batches, one at a time.
    auto out = methods_->export_batches.Responses();
    for (uint32_t i = 0; i < request->batches(); ++i) {
      Batch* batch = out.Next();  // arenarpc: was `batch.Clear()`
      arenarpc::bulk::FillBatch(request->scale(), i, batch);
      if (!writer->Write(*batch)) break;
    }
    return grpc::Status::OK;
  }

  // Client-streaming: route_guide's RecordRoute.
  grpc::Status Import(grpc::ServerContext* /*context*/,
                      grpc::ServerReader<Batch>* reader,
                      ImportSummary* summary) override {
    if (methods_ == nullptr) {  // gRPC's own loop
      Batch batch;
      while (reader->Read(&batch)) Tally(batch, summary);
      return grpc::Status::OK;
    }
    // arenarpc: the stream's incoming batches (was: `Batch batch;`), and
    // each Read parses into the next one (was: `&batch`).
    auto in = methods_->import_batches.Requests();
    while (reader->Read(in.Next())) Tally(*in, summary);
    return grpc::Status::OK;
  }

  // Bidi-streaming: route_guide's RouteChat; each batch is acknowledged by
  // the copy the server keeps, sent back.
  grpc::Status Sync(grpc::ServerContext* /*context*/,
                    grpc::ServerReaderWriter<Batch, Batch>* stream) override {
    if (methods_ == nullptr) {  // gRPC's own loop
      Batch batch;
      Batch stored;
      while (stream->Read(&batch)) {
        stored = batch;
        if (!stream->Write(stored)) break;
      }
      return grpc::Status::OK;
    }
    // arenarpc: a StreamMessages per direction (was: `Batch batch, stored;`).
    auto in = methods_->sync_batches.Requests();
    auto out = methods_->sync_batches.Responses();
    while (stream->Read(in.Next())) {  // arenarpc: was &batch
      Batch* stored = out.Next();      // arenarpc: was `stored`
      *stored = *in;
      if (!stream->Write(*stored)) break;
    }
    return grpc::Status::OK;
  }

 private:
  const StreamMethods* const methods_;
};

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  sigset_t signals;  // taken synchronously below; gRPC's threads inherit
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  std::unique_ptr<StreamMethods> methods;
  if (absl::GetFlag(FLAGS_mode) != "none") {
    absl::StatusOr<arenarpc::AllocationMode> mode =
        arenarpc::ParseAllocationMode(absl::GetFlag(FLAGS_mode));
    if (!mode.ok()) {
      std::fprintf(stderr, "%s (or none)\n", mode.status().ToString().c_str());
      return 2;
    }
    // arenarpc: the installs, and what they served.
    methods = std::make_unique<StreamMethods>(arenarpc::ServerOptions(*mode));
    arenarpc::InstallResult installed("arenarpc.bulk.BulkService");
    installed.Add(methods->export_batches.report());
    installed.Add(methods->import_batches.report());
    installed.Add(methods->sync_batches.report());
    std::fprintf(stderr, "%s\n", installed.ToString().c_str());
  } else {
    std::fprintf(stderr, "mode none (plain gRPC messages)\n");
  }

  BulkServiceImpl service(methods.get());
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(
      absl::StrCat(absl::GetFlag(FLAGS_host), ":", absl::GetFlag(FLAGS_port)),
      grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(absl::GetFlag(FLAGS_max_receive_bytes));
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "cannot listen on %s:%d\n",
                 absl::GetFlag(FLAGS_host).c_str(), absl::GetFlag(FLAGS_port));
    return 1;
  }
  std::printf("listening on %d\n", port);
  std::fflush(stdout);

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  std::fprintf(stderr, "signal %d: shutting down\n", signal_number);
  server->Shutdown(
      std::chrono::system_clock::now() +
      std::chrono::milliseconds(absl::GetFlag(FLAGS_shutdown_grace_ms)));
  server->Wait();
  std::fputs(arenarpc::RenderPrometheusStats().c_str(), stdout);
  std::fflush(stdout);
  return 0;
}
