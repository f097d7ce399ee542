// arenarpc_bulk_stream_client: drives every streaming method of
// arenarpc_bulk_stream_server the way gRPC's route_guide client does
// (ClientReader, ClientWriter, ClientReaderWriter on a sync stub) and checks
// every batch.
//
//   arenarpc_bulk_stream_server --port=0 &      # prints "listening on N"
//   arenarpc_bulk_stream_client --target=127.0.0.1:N --batches=100 --scale=100
//
// Export: asks for --batches batches, checks each against the one it builds
// itself. Import: streams --batches batches, checks the server's count,
// bytes and checksum. Sync: streams --batches batches, checks each one sent
// back. Prints one line per method and exits 0 if all three were correct.
#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "bulk.grpc.pb.h"
#include "bulk_batch.h"

ABSL_FLAG(std::string, target, "127.0.0.1:50051", "server address");
ABSL_FLAG(int, batches, 20, "batches per stream");
ABSL_FLAG(int, scale, 100, "batch scale (100: ~130 KB a batch)");
ABSL_FLAG(std::string, methods, "export,import,sync",
          "the methods to call, in order");

namespace {

using arenarpc::bulk::Batch;
using arenarpc::bulk::BatchChecksum;
using arenarpc::bulk::BulkService;
using arenarpc::bulk::ExportRequest;
using arenarpc::bulk::FillBatch;
using arenarpc::bulk::ImportSummary;

class BulkClient {
 public:
  BulkClient(const std::shared_ptr<grpc::Channel>& channel, int batches,
             int scale)
      : stub_(BulkService::NewStub(channel)), batches_(batches), scale_(scale) {
    // The batches to send, and what Export must answer: batch i of scale.
    for (int i = 0; i < batches; ++i) {
      Batch b;
      FillBatch(scale, i, &b);
      checksums_.push_back(BatchChecksum(b));
      sent_.push_back(std::move(b));
    }
  }

  // Server-streaming.
  bool Export() {
    grpc::ClientContext context;
    ExportRequest request;
    request.set_batches(batches_);
    request.set_scale(scale_);
    std::unique_ptr<grpc::ClientReader<Batch>> reader(
        stub_->Export(&context, request));
    Batch batch;
    int n = 0;
    bool same = true;
    while (reader->Read(&batch)) {
      same = same && n < batches_ && batch.sequence() == uint64_t(n) &&
             BatchChecksum(batch) == checksums_[n];
      ++n;
    }
    return Report("export", reader->Finish(), n, same);
  }

  // Client-streaming.
  bool Import() {
    grpc::ClientContext context;
    ImportSummary summary;
    std::unique_ptr<grpc::ClientWriter<Batch>> writer(
        stub_->Import(&context, &summary));
    uint64_t bytes = 0;
    uint64_t checksum = 0;
    int n = 0;
    for (const Batch& b : sent_) {
      if (!writer->Write(b)) break;
      bytes += b.ByteSizeLong();
      checksum = arenarpc::bulk::MixChecksum(checksum, checksums_[n]);
      ++n;
    }
    writer->WritesDone();
    const grpc::Status status = writer->Finish();
    const bool same = summary.batches() == uint64_t(n) &&
                      summary.bytes() == bytes &&
                      summary.checksum() == checksum;
    return Report("import", status, static_cast<int>(summary.batches()), same);
  }

  // Bidi-streaming: one batch out, its copy back, in lockstep.
  bool Sync() {
    grpc::ClientContext context;
    std::unique_ptr<grpc::ClientReaderWriter<Batch, Batch>> stream(
        stub_->Sync(&context));
    Batch back;
    int n = 0;
    bool same = true;
    for (const Batch& b : sent_) {
      if (!stream->Write(b) || !stream->Read(&back)) break;
      same = same && BatchChecksum(back) == checksums_[n];
      ++n;
    }
    stream->WritesDone();
    return Report("sync", stream->Finish(), n, same);
  }

 private:
  bool Report(const char* method, const grpc::Status& status, int n,
              bool same) {
    const bool ok = status.ok() && n == batches_ && same;
    std::printf("%s: %d batches%s%s\n", method, n,
                same ? "" : ", contents differ",
                status.ok() ? "" : (", " + status.error_message()).c_str());
    return ok;
  }

  std::unique_ptr<BulkService::Stub> stub_;
  const int batches_;
  const int scale_;
  std::vector<Batch> sent_;
  std::vector<uint64_t> checksums_;
};

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  auto channel = grpc::CreateCustomChannel(
      absl::GetFlag(FLAGS_target), grpc::InsecureChannelCredentials(), args);
  BulkClient client(channel, absl::GetFlag(FLAGS_batches),
                    absl::GetFlag(FLAGS_scale));
  int failures = 0;
  std::stringstream methods(absl::GetFlag(FLAGS_methods));
  std::string method;
  while (std::getline(methods, method, ',')) {
    bool ok = false;
    if (method == "export") {
      ok = client.Export();
    } else if (method == "import") {
      ok = client.Import();
    } else if (method == "sync") {
      ok = client.Sync();
    } else {
      std::fprintf(stderr, "--methods: export, import or sync, not %s\n",
                   method.c_str());
      return 2;
    }
    failures += ok ? 0 : 1;
  }
  std::printf("%d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
