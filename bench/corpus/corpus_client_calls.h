// The calls of arenarpc_corpus_client (corpus_client.cc), for any unary
// method: blocking calls through a sync stub, as gRPC's greeter_client
// makes them, or calls in flight on one completion queue through an async
// stub, as greeter_async_client2 does; with plain messages or an
// arenarpc::ClientCall scope.
//
//   const ClientMethod<KV::Stub, RangeRequest, RangeResponse> kRange = {
//       &KV::Stub::Range, &KV::Stub::PrepareAsyncRange, &Build, &Read};
//   ClientRun<KV::Stub, RangeRequest, RangeResponse> run{
//       &kRange, stub.get(), Messages::kArena, &data, &requests, &responses};
//   SyncPhase(&run, /*calls=*/1000, /*threads=*/4, /*offset=*/0);
//
// Call i builds its request from data[i % data.size()] (the client's own
// data), calls, and reads the response; a failed call counts in
// `failures`, what was read sums into `sink`.
//
// Thread safety: SyncPhase's threads share one ClientRun (its counters are
// atomic, MessagePool is thread-safe); run one phase at a time.
#ifndef ARENARPC_BENCH_CORPUS_CORPUS_CLIENT_CALLS_H_
#define ARENARPC_BENCH_CORPUS_CORPUS_CLIENT_CALLS_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "arenarpc/grpc/client.h"

namespace arenarpc::corpus {

enum class Messages { kPlain, kArena, kReuse };

// One unary method of a generated stub, and what a client does around it.
template <class Stub, class Req, class Resp>
struct ClientMethod {
  grpc::Status (Stub::*call)(grpc::ClientContext*, const Req&, Resp*);
  std::unique_ptr<grpc::ClientAsyncResponseReader<Resp>> (Stub::*prepare_async)(
      grpc::ClientContext*, const Req&, grpc::CompletionQueue*);
  // Builds the request from one item of the client's data.
  void (*build)(const std::string& data, Req* request);
  // Reads what the client uses of the response; returns a checksum.
  uint64_t (*read)(const Resp& response);
};

// One call's scope: plain members or a ClientCall.
template <class Req, class Resp>
class Call {
 public:
  Call(Messages messages, MessagePool<Req>* requests,
       MessagePool<Resp>* responses) {
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
  Req* request() { return plain_ ? &plain_->request : scope_->request(); }
  Resp* response() { return plain_ ? &plain_->response : scope_->response(); }

 private:
  struct Plain {
    grpc::ClientContext context;
    Req request;
    Resp response;
  };
  std::optional<Plain> plain_;
  std::optional<ClientCall<Req, Resp>> scope_;
};

template <class Stub, class Req, class Resp>
struct ClientRun {
  const ClientMethod<Stub, Req, Resp>* method;
  Stub* stub;
  Messages messages;
  const std::vector<std::string>* data;
  MessagePool<Req>* request_pool;
  MessagePool<Resp>* response_pool;
  std::atomic<uint64_t> sink{0};
  std::atomic<int> failures{0};

  Call<Req, Resp> NewCall() {
    return Call<Req, Resp>(messages, request_pool, response_pool);
  }
  const std::string& Data(int i) const { return (*data)[i % data->size()]; }
};

// Blocking calls [first, last), in turn.
template <class Stub, class Req, class Resp>
void SyncCalls(ClientRun<Stub, Req, Resp>* run, int first, int last) {
  uint64_t sink = 0;
  for (int i = first; i < last; ++i) {
    Call<Req, Resp> call = run->NewCall();
    run->method->build(run->Data(i), call.request());
    grpc::Status s = (run->stub->*run->method->call)(
        call.context(), *call.request(), call.response());
    if (!s.ok()) {
      run->failures.fetch_add(1);
      continue;
    }
    sink += run->method->read(*call.response());
  }
  run->sink.fetch_add(sink);
}

template <class Stub, class Req, class Resp>
void SyncPhase(ClientRun<Stub, Req, Resp>* run, int calls, int threads,
               int offset) {
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    const int first = offset + calls * t / threads;
    const int last = offset + calls * (t + 1) / threads;
    workers.emplace_back(SyncCalls<Stub, Req, Resp>, run, first, last);
  }
  for (std::thread& w : workers) w.join();
}

// `calls` async calls, `in_flight` at a time, on one completion queue.
template <class Stub, class Req, class Resp>
void AsyncPhase(ClientRun<Stub, Req, Resp>* run, int calls, int in_flight,
                int offset) {
  struct Pending {
    explicit Pending(ClientRun<Stub, Req, Resp>* run) : call(run->NewCall()) {}
    Call<Req, Resp> call;  // first: outlives the reader, as ClientCall needs
    grpc::Status status;
    std::unique_ptr<grpc::ClientAsyncResponseReader<Resp>> reader;
  };
  grpc::CompletionQueue cq;
  int started = 0;
  int done = 0;
  uint64_t sink = 0;
  auto start = [&] {
    auto* p = new Pending(run);
    run->method->build(run->Data(offset + started), p->call.request());
    p->reader = (run->stub->*run->method->prepare_async)(
        p->call.context(), *p->call.request(), &cq);
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
      sink += run->method->read(*p->call.response());
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

}  // namespace arenarpc::corpus

#endif  // ARENARPC_BENCH_CORPUS_CORPUS_CLIENT_CALLS_H_
