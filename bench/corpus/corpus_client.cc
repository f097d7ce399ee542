// arenarpc_corpus_client: the client side of a large-response corpus
// service (etcd_range: Kubernetes lists, README.md), through a sync or an
// async stub, with plain messages or arenarpc::ClientCall scopes; prints
// the client's CPU per call.
//
//   arenarpc_corpus_server --port=0 --mode=none        # any server API
//   arenarpc_corpus_client --target=127.0.0.1:N --stub=async --messages=arena
//   -> "client: stub async messages arena calls 2000 failures 0
//       cpu_us_per_call 812.4 peak_rss_kib 51234 (sink ...)"
//
// Each call builds its request (parsed from the corpus mix, as a client
// builds from its own data), calls Range, and reads the response (every
// key and value, as an informer decoding the list would). --stub=sync runs
// --concurrency threads of blocking calls (stub->Range(&ctx, req, &resp));
// --stub=async keeps --concurrency calls in flight on one completion queue
// (PrepareAsyncRange / Finish), as gRPC's async client examples do.
// --messages: plain (ClientContext and messages on the heap, what users
// write today), arena (ClientCall: context and messages on a pooled arena)
// or reuse (ClientCall over MessagePools). --tune_malloc: the first thing
// main does is arenarpc::TuneGlibcMalloc() (arenarpc/malloc_tuning.h; the
// run fails if it is refused). CPU is the whole process's (user + system,
// getrusage) over the timed calls, after --warmup calls; peak_rss_kib is the
// process's peak resident set (getrusage's ru_maxrss) over the whole run.
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "arenarpc/grpc/client.h"
#include "arenarpc/malloc_tuning.h"
#include "corpus.h"
#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"

ABSL_FLAG(std::string, target, "127.0.0.1:50051", "server address");
ABSL_FLAG(std::string, stub, "sync", "sync or async");
ABSL_FLAG(std::string, messages, "plain", "plain, arena or reuse");
ABSL_FLAG(int, calls, 1000, "timed calls");
ABSL_FLAG(int, warmup, 100, "calls before timing");
ABSL_FLAG(int, concurrency, 4, "threads (sync) or calls in flight (async)");
ABSL_FLAG(int, requests, 200, "distinct requests of the mix, used in turn");
ABSL_FLAG(bool, tune_malloc, false,
          "call arenarpc::TuneGlibcMalloc() first (fails if refused)");

namespace {

using ::etcdserverpb::KV;
using ::etcdserverpb::RangeRequest;
using ::etcdserverpb::RangeResponse;

enum class Messages { kPlain, kArena, kReuse };

// What an informer reads of a list: every key, value and revision.
uint64_t ReadResponse(const RangeResponse& r) {
  uint64_t h = static_cast<uint64_t>(r.header().revision());
  for (const auto& kv : r.kvs()) {
    h += kv.key().size() + static_cast<uint64_t>(kv.mod_revision());
    for (size_t i = 0; i < kv.value().size(); i += 64) {
      h = h * 31 + static_cast<unsigned char>(kv.value()[i]);
    }
  }
  return h;
}

double CpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// One call's scope: plain members or a ClientCall.
class Call {
 public:
  Call(Messages messages, arenarpc::MessagePool<RangeRequest>* requests,
       arenarpc::MessagePool<RangeResponse>* responses) {
    switch (messages) {
      case Messages::kPlain:
        plain_.emplace();
        break;
      case Messages::kArena:
        scope_.emplace();
        break;
      case Messages::kReuse:
        scope_.emplace(*requests, *responses);
        break;
    }
  }
  grpc::ClientContext* context() {
    return plain_ ? &plain_->context : scope_->context();
  }
  RangeRequest* request() {
    return plain_ ? &plain_->request : scope_->request();
  }
  RangeResponse* response() {
    return plain_ ? &plain_->response : scope_->response();
  }

 private:
  struct Plain {
    grpc::ClientContext context;
    RangeRequest request;
    RangeResponse response;
  };
  std::optional<Plain> plain_;
  std::optional<arenarpc::ClientCall<RangeRequest, RangeResponse>> scope_;
};

struct Run {
  KV::Stub* stub;
  Messages messages;
  const std::vector<std::string>* requests;
  arenarpc::MessagePool<RangeRequest>* request_pool;
  arenarpc::MessagePool<RangeResponse>* response_pool;
  std::atomic<uint64_t> sink{0};
  std::atomic<int> failures{0};
};

// Blocking calls [first, last) of the request list, in turn.
void SyncCalls(Run* run, int first, int last) {
  uint64_t sink = 0;
  for (int i = first; i < last; ++i) {
    Call call(run->messages, run->request_pool, run->response_pool);
    const std::string& bytes = (*run->requests)[i % run->requests->size()];
    if (!call.request()->ParseFromString(bytes)) std::abort();
    grpc::Status s =
        run->stub->Range(call.context(), *call.request(), call.response());
    if (!s.ok()) {
      run->failures.fetch_add(1);
      continue;
    }
    sink += ReadResponse(*call.response());
  }
  run->sink.fetch_add(sink);
}

void SyncPhase(Run* run, int calls, int threads, int offset) {
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    const int first = offset + calls * t / threads;
    const int last = offset + calls * (t + 1) / threads;
    workers.emplace_back(SyncCalls, run, first, last);
  }
  for (std::thread& w : workers) w.join();
}

// `calls` async calls, `in_flight` at a time, on one completion queue.
void AsyncPhase(Run* run, int calls, int in_flight, int offset) {
  struct Pending {
    explicit Pending(Run* run)
        : call(run->messages, run->request_pool, run->response_pool) {}
    Call call;  // first: outlives the reader, as ClientCall requires
    grpc::Status status;
    std::unique_ptr<grpc::ClientAsyncResponseReader<RangeResponse>> reader;
  };
  grpc::CompletionQueue cq;
  int started = 0;
  int done = 0;
  uint64_t sink = 0;
  auto start = [&] {
    auto* p = new Pending(run);
    const std::string& bytes =
        (*run->requests)[(offset + started) % run->requests->size()];
    if (!p->call.request()->ParseFromString(bytes)) std::abort();
    p->reader = run->stub->PrepareAsyncRange(p->call.context(),
                                             *p->call.request(), &cq);
    p->reader->StartCall();
    p->reader->Finish(p->call.response(), &p->status, p);
    ++started;
  };
  while (started < calls && started < in_flight) start();
  void* tag = nullptr;
  bool ok = false;
  while (done < calls && cq.Next(&tag, &ok)) {
    auto* p = static_cast<Pending*>(tag);
    if (ok && p->status.ok()) {
      sink += ReadResponse(*p->call.response());
    } else {
      run->failures.fetch_add(1);
    }
    delete p;
    ++done;
    if (started < calls) start();
  }
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  run->sink.fetch_add(sink);
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
  const arenarpc::corpus::Service* service =
      arenarpc::corpus::FindService("etcd_range");
  const std::vector<std::string> requests =
      service->generate(/*seed=*/1, absl::GetFlag(FLAGS_requests));

  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  std::unique_ptr<KV::Stub> stub = KV::NewStub(grpc::CreateCustomChannel(
      absl::GetFlag(FLAGS_target), grpc::InsecureChannelCredentials(), args));
  arenarpc::MessagePool<RangeRequest> request_pool;
  arenarpc::MessagePool<RangeResponse> response_pool;
  Run run{stub.get(), messages, &requests, &request_pool, &response_pool};

  const int calls = absl::GetFlag(FLAGS_calls);
  const int warmup = absl::GetFlag(FLAGS_warmup);
  const int concurrency = absl::GetFlag(FLAGS_concurrency);
  auto phase = stub_kind == "sync" ? &SyncPhase : &AsyncPhase;
  phase(&run, warmup, concurrency, 0);
  const double cpu0 = CpuSeconds();
  phase(&run, calls, concurrency, warmup);
  const double cpu = CpuSeconds() - cpu0;
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  std::printf(
      "client: stub %s messages %s calls %d failures %d cpu_us_per_call %.1f "
      "peak_rss_kib %ld (sink %llu)\n",
      stub_kind.c_str(), messages_name.c_str(), calls, run.failures.load(),
      cpu / calls * 1e6, usage.ru_maxrss,
      static_cast<unsigned long long>(run.sink.load()));
  return run.failures.load() == 0 ? 0 : 1;
}
