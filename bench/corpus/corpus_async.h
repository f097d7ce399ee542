// The corpus services on gRPC's async completion-queue API, written the way
// gRPC's async greeter writes them (one CallData per call, a thread per
// completion queue): arenarpc_corpus_server --api=async.
//
//   grpc::ServerBuilder builder;
//   AsyncCorpus async(&builder, /*cqs=*/2, options);  // nullopt: plain gRPC
//   std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
//   async.Start();             // posts the first requests, starts the threads
//   ...
//   server->Shutdown(deadline);
//   async.Stop();              // drains the queues, joins the threads
//
// Plain (no options): each CallData holds its request and response as
// members, as the greeter does. With options: each method has an
// arenarpc::AsyncMethod and each CallData takes its messages from it
// (arenarpc/grpc/async.h), the porting the library documents.
//
// Thread safety: construct, Start and Stop from one thread, in that order.
#ifndef ARENARPC_BENCH_CORPUS_CORPUS_ASYNC_H_
#define ARENARPC_BENCH_CORPUS_CORPUS_ASYNC_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "arenarpc/grpc/install_result.h"
#include "arenarpc/grpc/server.h"

namespace arenarpc::corpus {

class AsyncCorpus {
 public:
  // Registers every corpus service's AsyncService on `builder` and adds
  // `cqs` completion queues. `options` empty: plain gRPC messages.
  AsyncCorpus(grpc::ServerBuilder* builder, int cqs,
              std::optional<ServerOptions> options);
  ~AsyncCorpus();
  AsyncCorpus(const AsyncCorpus&) = delete;
  AsyncCorpus& operator=(const AsyncCorpus&) = delete;

  // One entry per method, as an install reports it (empty when plain).
  const InstallResult& installed() const { return installed_; }
  // After BuildAndStart: `pending` requests posted per method per queue;
  // `lines`: the threads use arenarpc::NextTag and each call Arrived() and
  // Answered() (auto learns on the real calls), else plain cq->Next (auto
  // stays on arena).
  void Start(int pending, bool lines = true);
  // After the server's Shutdown: every queue drained, threads joined.
  void Stop();

  struct Method;  // one served method (corpus_async.cc)
  // A completion queue. gRPC aborts the process when an operation starts on
  // a queue after its Shutdown(), and a request that arrived as the server
  // shut down can still come out of Next() after that (under load many
  // do): operations start under `mu`, and none once `shut`.
  struct Queue {
    std::unique_ptr<grpc::ServerCompletionQueue> cq;
    std::mutex mu;
    bool shut = false;  // guarded by mu
  };

 private:
  template <class AsyncSvc, class Req, class Resp, auto kRequest>
  void Add(grpc::ServerBuilder* builder,
           const std::optional<ServerOptions>& options,
           const char* corpus_name);

  std::vector<std::unique_ptr<grpc::Service>> services_;
  std::vector<std::unique_ptr<Queue>> queues_;
  std::vector<std::unique_ptr<Method>> methods_;
  std::vector<std::thread> threads_;
  InstallResult installed_;
};

}  // namespace arenarpc::corpus

#endif  // ARENARPC_BENCH_CORPUS_CORPUS_ASYNC_H_
