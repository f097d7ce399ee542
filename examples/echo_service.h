// The echo service of the examples and the end-to-end tests, and its
// allocation-heavy payload.
//
//   arenarpc::echo::EchoServiceImpl service;
//   arenarpc::echo::InstallEchoServiceAllocators(&service, mode);
//   builder.RegisterService(&service);
//   ...
//   server->Shutdown(deadline);
//   service.Stop();   // after Shutdown: finishes nothing is left waiting
//
//   arenarpc::echo::EchoRequest request;
//   arenarpc::echo::BuildEchoRequest(/*scale=*/100, /*seed=*/7, &request);
//   ... call ...
//   std::string why;
//   bool ok = arenarpc::echo::VerifyEchoResponse(request, response, &why);
//
// Echo copies payload and results into the response, then frees the request
// early (FreeRequest(), handled by every allocation mode), and finishes at
// once or, if the request asks for a delay, later from a timer thread.
// EchoStream answers each message of a bidirectional stream; its messages
// live on a StreamArena.
//
// Thread safety: the service is thread-safe (gRPC calls it concurrently).
// Lifetime: Stop() (or the destructor) must run after the server's
// Shutdown() returned; it finishes delayed calls still waiting.
#ifndef ARENARPC_EXAMPLES_ECHO_SERVICE_H_
#define ARENARPC_EXAMPLES_ECHO_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <queue>
#include <string>
#include <thread>
#include <vector>

#include "echo.arenarpc.h"
#include "echo.grpc.pb.h"
#include "echo.pb.h"

namespace arenarpc::echo {

// Fills `request` (any arena) with a deterministic payload: 10 x scale
// payload entries of 12 bytes and `scale` results x 10 items x 10 terms of
// 8 bytes. scale = 100: ~130 KB, ~11,100 byte fields.
void BuildEchoRequest(int scale, uint32_t seed, EchoRequest* request);
// The same payload into any message's `repeated bytes` and `repeated
// Result` fields (the streaming example's batches, bulk.proto).
void FillPayload(int scale, uint32_t seed,
                 google::protobuf::RepeatedPtrField<std::string>* payload,
                 google::protobuf::RepeatedPtrField<Result>* results);

// The echo: payload and results copied, the request's size recorded.
void FillResponse(const EchoRequest& request, EchoResponse* response);

// True if `response` echoes `request`; otherwise `why` says what differs.
bool VerifyEchoResponse(const EchoRequest& request,
                        const EchoResponse& response, std::string* why);

// Finishes unary reactors at a later time, from its own thread.
class DelayedFinisher {
 public:
  DelayedFinisher();
  ~DelayedFinisher();  // Stop()
  void FinishLater(grpc::ServerUnaryReactor* reactor, grpc::Status status,
                   std::chrono::milliseconds delay);
  // Finishes every waiting reactor now and joins the thread. Idempotent.
  void Stop();

 private:
  struct Item {
    std::chrono::steady_clock::time_point when;
    grpc::ServerUnaryReactor* reactor;
    grpc::Status status;
    bool operator>(const Item& o) const { return when > o.when; }
  };
  void Run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> items_;
  bool stopping_ = false;
  std::thread thread_;
};

class EchoServiceImpl final : public EchoService::CallbackService {
 public:
  grpc::ServerUnaryReactor* Echo(grpc::CallbackServerContext* context,
                                 const EchoRequest* request,
                                 EchoResponse* response) override;
  grpc::ServerBidiReactor<EchoRequest, EchoResponse>* EchoStream(
      grpc::CallbackServerContext* context) override;

  void Stop() { finisher_.Stop(); }

 private:
  DelayedFinisher finisher_;
};

// The same service on the sync API (gRPC's thread pool, blocking handler),
// as gRPC's own examples write services. Echo blocks for delay_ms (as a
// handler waiting on a database would), waking early when the call is
// cancelled or its deadline passes, and reflects ServerContext features:
// client metadata "x-echo" comes back as initial metadata "x-echo-initial"
// and trailing "x-echo-trailing", with the peer ("x-echo-peer") and the
// auth context's transport security type ("x-echo-security"); "x-compress:
// gzip" makes the response gzip-compressed.
class EchoSyncServiceImpl final : public EchoService::Service {
 public:
  grpc::Status Echo(grpc::ServerContext* context, const EchoRequest* request,
                    EchoResponse* response) override;
  grpc::Status EchoStream(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<EchoResponse, EchoRequest>* stream) override;
  // Calls that saw their cancellation while blocked.
  int cancelled_seen() const { return cancelled_seen_.load(); }

 private:
  std::atomic<int> cancelled_seen_{0};
};

}  // namespace arenarpc::echo

#endif  // ARENARPC_EXAMPLES_ECHO_SERVICE_H_
