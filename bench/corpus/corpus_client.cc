// arenarpc_corpus_client: the client side of a corpus service through a
// sync or an async stub, with plain messages or arenarpc::ClientCall
// scopes; prints the client's CPU per call. --service: etcd_range (large
// responses: Kubernetes lists, README.md) or health (grpc.health.v1
// Health/Check: requests of 0-53 B, a 2-byte response).
//
//   arenarpc_corpus_server --port=0 --mode=none        # any server API
//   arenarpc_corpus_client --target=127.0.0.1:N --stub=async --messages=arena
//   -> "client: stub async messages arena calls 2000 failures 0
//       cpu_us_per_call 812.4 peak_rss_kib 51234 (sink ...)"
//
// Each call builds its request as a client would from its own data
// (etcd_range: parsed from the corpus mix; health: the service name a
// probe checks, from the mix), calls, and reads the response (etcd_range:
// every key and value, as an informer decoding the list would; health: the
// status). --stub=sync runs --concurrency threads of blocking calls
// (stub->Range(&ctx, req, &resp)); --stub=async keeps --concurrency calls
// in flight on one completion queue (PrepareAsyncRange / Finish), as
// gRPC's async client examples do (corpus_client_calls.h).
// --messages: plain (ClientContext and messages on the heap, what users
// write today), arena (ClientCall: context and messages on a pooled arena)
// or reuse (ClientCall over MessagePools). --tune_malloc: the first thing
// main does is arenarpc::TuneGlibcMalloc() (arenarpc/malloc_tuning.h; the
// run fails if it is refused). CPU is the whole process's (user + system,
// getrusage) over the timed calls, after --warmup calls; peak_rss_kib is the
// process's peak resident set (getrusage's ru_maxrss) over the whole run.
// Exits 1 if a call failed, 2 on a bad flag.
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "arenarpc/malloc_tuning.h"
#include "corpus.h"
#include "corpus_client_calls.h"
#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"

ABSL_FLAG(std::string, target, "127.0.0.1:50051", "server address");
ABSL_FLAG(std::string, service, "etcd_range", "etcd_range or health");
ABSL_FLAG(std::string, stub, "sync", "sync or async");
ABSL_FLAG(std::string, messages, "plain", "plain, arena or reuse");
ABSL_FLAG(int, calls, 1000, "timed calls");
ABSL_FLAG(int, warmup, 100, "calls before timing");
ABSL_FLAG(int, concurrency, 4, "threads (sync) or calls in flight (async)");
ABSL_FLAG(int, requests, 200, "distinct requests of the mix, used in turn");
ABSL_FLAG(bool, tune_malloc, false,
          "call arenarpc::TuneGlibcMalloc() first (fails if refused)");

namespace {

using ::arenarpc::corpus::ClientMethod;
using ::arenarpc::corpus::ClientRun;
using ::arenarpc::corpus::Messages;
using ::etcdserverpb::KV;
using ::etcdserverpb::RangeRequest;
using ::etcdserverpb::RangeResponse;
using ::grpc::health::v1::Health;
using ::grpc::health::v1::HealthCheckRequest;
using ::grpc::health::v1::HealthCheckResponse;

// etcd_range: the request parsed from the mix's bytes.
void BuildRange(const std::string& bytes, RangeRequest* request) {
  if (!request->ParseFromString(bytes)) std::abort();
}

// What an informer reads of a list: every key, value and revision.
uint64_t ReadRange(const RangeResponse& r) {
  uint64_t h = static_cast<uint64_t>(r.header().revision());
  for (const auto& kv : r.kvs()) {
    h += kv.key().size() + static_cast<uint64_t>(kv.mod_revision());
    for (size_t i = 0; i < kv.value().size(); i += 64) {
      h = h * 31 + static_cast<unsigned char>(kv.value()[i]);
    }
  }
  return h;
}

// health: a probe names the service it checks ("" for the whole server).
void BuildHealth(const std::string& service, HealthCheckRequest* request) {
  request->set_service(service);
}

// A probe reads the status: counts SERVING answers.
uint64_t ReadHealth(const HealthCheckResponse& r) {
  return r.status() == HealthCheckResponse::SERVING ? 1 : 0;
}

const ClientMethod<KV::Stub, RangeRequest, RangeResponse> kRange = {
    &KV::Stub::Range, &KV::Stub::PrepareAsyncRange, &BuildRange, &ReadRange};
const ClientMethod<Health::Stub, HealthCheckRequest, HealthCheckResponse>
    kHealth = {&Health::Stub::Check, &Health::Stub::PrepareAsyncCheck,
               &BuildHealth, &ReadHealth};

// The service names of the health mix's requests, in order.
std::vector<std::string> ServiceNames(const std::vector<std::string>& mix) {
  std::vector<std::string> names;
  for (const std::string& bytes : mix) {
    HealthCheckRequest request;
    if (!request.ParseFromString(bytes)) std::abort();
    names.push_back(request.service());
  }
  return names;
}

double CpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// Warm-up calls, then the timed calls; prints the result line.
template <class Stub, class Req, class Resp>
int Measure(const ClientMethod<Stub, Req, Resp>& method,
            std::unique_ptr<Stub> stub, const std::vector<std::string>& data,
            Messages messages) {
  arenarpc::MessagePool<Req> request_pool;
  arenarpc::MessagePool<Resp> response_pool;
  ClientRun<Stub, Req, Resp> run{&method, stub.get(),    messages,
                                 &data,   &request_pool, &response_pool};
  const std::string stub_kind = absl::GetFlag(FLAGS_stub);
  const int calls = absl::GetFlag(FLAGS_calls);
  const int warmup = absl::GetFlag(FLAGS_warmup);
  const int concurrency = absl::GetFlag(FLAGS_concurrency);
  auto phase = stub_kind == "sync"
                   ? &arenarpc::corpus::SyncPhase<Stub, Req, Resp>
                   : &arenarpc::corpus::AsyncPhase<Stub, Req, Resp>;
  phase(&run, warmup, concurrency, 0);
  const double cpu0 = CpuSeconds();
  phase(&run, calls, concurrency, warmup);
  const double cpu = CpuSeconds() - cpu0;
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  std::printf(
      "client: stub %s messages %s calls %d failures %d cpu_us_per_call %.1f "
      "peak_rss_kib %ld (sink %llu)\n",
      stub_kind.c_str(), absl::GetFlag(FLAGS_messages).c_str(), calls,
      run.failures.load(), cpu / calls * 1e6, usage.ru_maxrss,
      static_cast<unsigned long long>(run.sink.load()));
  return run.failures.load() == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (absl::GetFlag(FLAGS_tune_malloc)) {
    const absl::Status tuned = arenarpc::TuneGlibcMalloc();
    if (!tuned.ok()) {
      std::fprintf(stderr, "--tune_malloc: %s\n", tuned.ToString().c_str());
      return 2;
    }
  }
  const std::string stub_kind = absl::GetFlag(FLAGS_stub);
  const std::string messages_name = absl::GetFlag(FLAGS_messages);
  Messages messages;
  if (messages_name == "plain") {
    messages = Messages::kPlain;
  } else if (messages_name == "arena") {
    messages = Messages::kArena;
  } else if (messages_name == "reuse") {
    messages = Messages::kReuse;
  } else {
    std::fprintf(stderr, "--messages: plain, arena or reuse\n");
    return 2;
  }
  if (stub_kind != "sync" && stub_kind != "async") {
    std::fprintf(stderr, "--stub: sync or async\n");
    return 2;
  }
  const std::string service_name = absl::GetFlag(FLAGS_service);
  if (service_name != "etcd_range" && service_name != "health") {
    std::fprintf(stderr, "--service: etcd_range or health, not %s\n",
                 service_name.c_str());
    return 2;
  }
  const std::vector<std::string> requests =
      arenarpc::corpus::FindService(service_name)
          ->generate(/*seed=*/1, absl::GetFlag(FLAGS_requests));

  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  std::shared_ptr<grpc::Channel> channel = grpc::CreateCustomChannel(
      absl::GetFlag(FLAGS_target), grpc::InsecureChannelCredentials(), args);
  if (service_name == "health") {
    return Measure(kHealth, Health::NewStub(channel), ServiceNames(requests),
                   messages);
  }
  return Measure(kRange, KV::NewStub(channel), requests, messages);
}
