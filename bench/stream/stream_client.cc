// arenarpc_stream_client: streams corpus OTLP metrics requests
// (otlp_metrics, bench/corpus) to arenarpc_stream_server's Ingest.
//
//   arenarpc_stream_client --target=127.0.0.1:N --calls=3 --messages=1000
//       --min_bytes=80000 --max_bytes=130000
//   # "calls 3 messages 3000 bytes ... mean_bytes ... seconds ..."
//   arenarpc_stream_client ... --seconds=600   # one call, streams 10 min
//   arenarpc_stream_client ... --seconds=600 --rate=100   # 100 messages/s
//   arenarpc_stream_client ... --small --min_bytes=0 --max_bytes=4096
//
// Messages are the corpus mix's requests whose size is in [min_bytes,
// max_bytes], serialized once and sent as they are (the client's CPU stays
// out of the server's way). Exits 1 if a call fails or the server's count or
// checksum of a call disagrees with what was sent.
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/client_unary_call.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "corpus.h"
#include "stream_bench.grpc.pb.h"

ABSL_FLAG(std::string, target, "127.0.0.1:50051", "server address");
ABSL_FLAG(int, calls, 1, "calls (streams), one after another");
ABSL_FLAG(int, messages, 1000, "messages per call");
ABSL_FLAG(int, min_bytes, 80000, "smallest message used");
ABSL_FLAG(int, max_bytes, 130000, "largest message used");
ABSL_FLAG(int, distinct, 64, "distinct messages, sent round robin");
ABSL_FLAG(bool, small, false,
          "cut each picked request down to its first metric (the small "
          "messages case; pick them with --min_bytes=0)");
ABSL_FLAG(double, seconds, 0,
          "if > 0: one call streaming for this long (--calls, --messages "
          "ignored)");
ABSL_FLAG(double, rate, 0,
          "if > 0: at most this many messages per second (each message "
          "waits for its slot on a fixed schedule; 0: as fast as the "
          "server reads)");

namespace {

using Request =
    opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest;

// The request with only its first resource's first scope's first metric.
std::string FirstMetric(const std::string& bytes) {
  Request r;
  r.ParseFromString(bytes);
  if (r.resource_metrics_size() == 0) return bytes;
  auto* rm = r.mutable_resource_metrics(0);
  r.mutable_resource_metrics()->DeleteSubrange(1,
                                               r.resource_metrics_size() - 1);
  if (rm->scope_metrics_size() == 0) return r.SerializeAsString();
  auto* sm = rm->mutable_scope_metrics(0);
  rm->mutable_scope_metrics()->DeleteSubrange(1, rm->scope_metrics_size() - 1);
  if (sm->metrics_size() > 1) {
    sm->mutable_metrics()->DeleteSubrange(1, sm->metrics_size() - 1);
  }
  return r.SerializeAsString();
}

std::vector<std::string> Pick() {
  const arenarpc::corpus::Service* s =
      arenarpc::corpus::FindService("otlp_metrics");
  const size_t lo = absl::GetFlag(FLAGS_min_bytes);
  const size_t hi = absl::GetFlag(FLAGS_max_bytes);
  const size_t want = absl::GetFlag(FLAGS_distinct);
  const bool small = absl::GetFlag(FLAGS_small);
  std::vector<std::string> out;
  for (uint64_t seed = 1; out.size() < want && seed < 64; ++seed) {
    for (std::string& m : s->generate(seed, 200)) {
      if (small) m = FirstMetric(m);
      if (m.size() >= lo && m.size() <= hi && out.size() < want) {
        out.push_back(std::move(m));
      }
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const std::vector<std::string> messages = Pick();
  if (messages.empty()) {
    std::fprintf(stderr, "no corpus message in the size range\n");
    return 2;
  }
  // The walk each message gets on the server, to check the server's sum.
  const arenarpc::corpus::Service* s =
      arenarpc::corpus::FindService("otlp_metrics");
  std::vector<uint64_t> walks;
  std::vector<grpc::ByteBuffer> buffers;
  uint64_t total_bytes = 0;
  for (const std::string& m : messages) {
    Request r;
    r.ParseFromString(m);
    walks.push_back(s->walk(r));
    grpc::Slice slice(m);
    buffers.emplace_back(&slice, 1);
    total_bytes += m.size();
  }
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(64 << 20);
  auto channel = grpc::CreateCustomChannel(
      absl::GetFlag(FLAGS_target), grpc::InsecureChannelCredentials(), args);
  const grpc::internal::RpcMethod method(
      "/arenarpc.streambench.StreamBench/Ingest",
      grpc::internal::RpcMethod::CLIENT_STREAMING);
  const double seconds = absl::GetFlag(FLAGS_seconds);
  const int calls = seconds > 0 ? 1 : absl::GetFlag(FLAGS_calls);
  const int per_call = absl::GetFlag(FLAGS_messages);
  const double rate = absl::GetFlag(FLAGS_rate);
  uint64_t sent = 0, bytes = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int c = 0; c < calls; ++c) {
    grpc::ClientContext context;
    arenarpc::streambench::Ack ack;
    std::unique_ptr<grpc::ClientWriter<grpc::ByteBuffer>> writer(
        grpc::internal::ClientWriterFactory<grpc::ByteBuffer>::Create(
            channel.get(), method, &context, &ack));
    uint64_t n = 0, checksum = 0;
    for (;; ++n) {
      if (seconds > 0) {
        if ((rate > 0 || (n & 63) == 0) &&
            std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                          start)
                    .count() >= seconds) {
          break;
        }
      } else if (n == static_cast<uint64_t>(per_call)) {
        break;
      }
      if (rate > 0) {  // message k of the run is due at start + k / rate
        std::this_thread::sleep_until(
            start + std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::duration<double>((sent + n) / rate)));
      }
      const size_t i = n % buffers.size();
      if (!writer->Write(buffers[i])) break;
      checksum = checksum * 31 + walks[i];
      bytes += messages[i].size();
    }
    writer->WritesDone();
    const grpc::Status status = writer->Finish();
    if (!status.ok() || ack.messages() != n || ack.checksum() != checksum) {
      std::fprintf(stderr, "call %d: %s, server saw %llu of %llu messages%s\n",
                   c, status.error_message().c_str(),
                   (unsigned long long)ack.messages(), (unsigned long long)n,
                   ack.checksum() != checksum ? ", checksum differs" : "");
      return 1;
    }
    sent += n;
  }
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf(
      "calls %d messages %llu bytes %llu mean_bytes %.0f seconds %.3f\n", calls,
      (unsigned long long)sent, (unsigned long long)bytes,
      static_cast<double>(total_bytes) / messages.size(), elapsed);
  return 0;
}
