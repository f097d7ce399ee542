#include "echo_service.h"

#include <cstdio>
#include <utility>

#include "arenarpc/grpc/stream.h"

namespace arenarpc::echo {
namespace {

// Deterministic bytes of length n, from (seed, a, b).
void FillBytes(uint32_t seed, uint32_t a, uint32_t b, size_t n,
               std::string* out) {
  uint64_t x = (uint64_t{seed} * 0x9E3779B97F4A7C15ull) ^
               (uint64_t{a} << 32 | b) ^ 0xD1B54A32D192ED03ull;
  out->resize(n);
  for (size_t i = 0; i < n; ++i) {
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDull;
    x ^= x >> 29;
    (*out)[i] = static_cast<char>('a' + (x % 26));
  }
}

}  // namespace

void FillResponse(const EchoRequest& request, EchoResponse* response) {
  response->mutable_payload()->CopyFrom(request.payload());
  response->mutable_results()->CopyFrom(request.results());
  response->set_request_bytes(request.ByteSizeLong());
}

void BuildEchoRequest(int scale, uint32_t seed, EchoRequest* request) {
  FillPayload(scale, seed, request->mutable_payload(),
              request->mutable_results());
}

void FillPayload(int scale, uint32_t seed,
                 google::protobuf::RepeatedPtrField<std::string>* payload,
                 google::protobuf::RepeatedPtrField<Result>* results) {
  for (int i = 0; i < 10 * scale; ++i) {
    FillBytes(seed, 1, i, 12, payload->Add());
  }
  for (int r = 0; r < scale; ++r) {
    Result* result = results->Add();
    FillBytes(seed, 2, r, 8, result->mutable_id());
    for (int i = 0; i < 10; ++i) {
      Item* item = result->add_items();
      item->set_score(r + i / 16.0);
      for (int t = 0; t < 10; ++t) {
        FillBytes(seed, 3 + r, i * 10 + t, 8, item->add_terms());
      }
    }
  }
}

bool VerifyEchoResponse(const EchoRequest& request,
                        const EchoResponse& response, std::string* why) {
  auto fail = [why](std::string what) {
    if (why != nullptr) *why = std::move(what);
    return false;
  };
  if (response.request_bytes() != request.ByteSizeLong()) {
    return fail("request_bytes " + std::to_string(response.request_bytes()) +
                " != " + std::to_string(request.ByteSizeLong()));
  }
  if (response.payload_size() != request.payload_size()) {
    return fail("payload size differs");
  }
  for (int i = 0; i < request.payload_size(); ++i) {
    if (response.payload(i) != request.payload(i)) {
      return fail("payload " + std::to_string(i) + " differs");
    }
  }
  if (response.results_size() != request.results_size()) {
    return fail("results size differs");
  }
  for (int r = 0; r < request.results_size(); ++r) {
    if (response.results(r).SerializeAsString() !=
        request.results(r).SerializeAsString()) {
      return fail("result " + std::to_string(r) + " differs");
    }
  }
  return true;
}

DelayedFinisher::DelayedFinisher() : thread_([this] { Run(); }) {}

DelayedFinisher::~DelayedFinisher() { Stop(); }

void DelayedFinisher::FinishLater(grpc::ServerUnaryReactor* reactor,
                                  grpc::Status status,
                                  std::chrono::milliseconds delay) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      items_.push({std::chrono::steady_clock::now() + delay, reactor,
                   std::move(status)});
      cv_.notify_one();
      return;
    }
  }
  reactor->Finish(std::move(status));
}

void DelayedFinisher::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

void DelayedFinisher::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (items_.empty()) {
      if (stopping_) return;
      cv_.wait(lock);
      continue;
    }
    // A copy: the queue may reallocate while we wait.
    const std::chrono::steady_clock::time_point when = items_.top().when;
    if (!stopping_ && when > std::chrono::steady_clock::now()) {
      cv_.wait_until(lock, when);
      continue;
    }
    Item item = items_.top();
    items_.pop();
    lock.unlock();
    item.reactor->Finish(std::move(item.status));  // another thread, later
    lock.lock();
  }
}

grpc::ServerUnaryReactor* EchoServiceImpl::Echo(
    grpc::CallbackServerContext* context, const EchoRequest* request,
    EchoResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const uint32_t delay_ms = request->delay_ms();
  grpc::Status status;
  if (request->fail_with_code() != 0) {
    status = grpc::Status(
        static_cast<grpc::StatusCode>(request->fail_with_code()), "requested");
  } else {
    FillResponse(*request, response);
  }
  // The request is not needed any more: every arenarpc mode frees it now.
  context->GetRpcAllocatorState()->FreeRequest();
  request = nullptr;
  if (delay_ms > 0) {
    finisher_.FinishLater(reactor, std::move(status),
                          std::chrono::milliseconds(delay_ms));
  } else {
    reactor->Finish(std::move(status));
  }
  return reactor;
}

namespace {

// One stream: read a request, write its echo, repeat. Messages on a
// StreamArena, so a long stream reuses the same pooled pages.
class EchoStreamReactor final
    : public grpc::ServerBidiReactor<EchoRequest, EchoResponse> {
 public:
  EchoStreamReactor() { Next(); }

  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::OK);
      return;
    }
    response_ = arena_.Create<EchoResponse>();
    FillResponse(*request_, response_.get());
    request_.reset();
    StartWrite(response_.get());
  }
  void OnWriteDone(bool ok) override {
    response_.reset();
    if (ok) {
      Next();
    } else {
      Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "write failed"));
    }
  }
  void OnDone() override { delete this; }

 private:
  void Next() {
    request_ = arena_.Create<EchoRequest>();
    StartRead(request_.get());
  }

  arenarpc::StreamArena arena_;  // before the messages: destroyed after them
  arenarpc::StreamMessage<EchoRequest> request_;
  arenarpc::StreamMessage<EchoResponse> response_;
};

}  // namespace

grpc::ServerBidiReactor<EchoRequest, EchoResponse>* EchoServiceImpl::EchoStream(
    grpc::CallbackServerContext* /*context*/) {
  return new EchoStreamReactor();
}

}  // namespace arenarpc::echo

namespace arenarpc::echo {

grpc::Status EchoSyncServiceImpl::Echo(grpc::ServerContext* context,
                                       const EchoRequest* request,
                                       EchoResponse* response) {
  // Block as a handler waiting on another service would, a few ms at a
  // time so that a cancelled call (or a passed deadline) ends the wait.
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(request->delay_ms());
  while (std::chrono::steady_clock::now() < until) {
    if (context->IsCancelled()) {
      cancelled_seen_.fetch_add(1);
      return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const auto& meta = context->client_metadata();
  if (auto it = meta.find("x-echo"); it != meta.end()) {
    const std::string v(it->second.data(), it->second.size());
    context->AddInitialMetadata("x-echo-initial", v);
    context->AddTrailingMetadata("x-echo-trailing", v);
    context->AddTrailingMetadata("x-echo-peer", context->peer());
    std::shared_ptr<const grpc::AuthContext> auth = context->auth_context();
    std::string security = "none";
    if (auth != nullptr) {
      for (const grpc::string_ref& s :
           auth->FindPropertyValues("transport_security_type")) {
        security.assign(s.data(), s.size());
      }
    }
    context->AddTrailingMetadata("x-echo-security", security);
  }
  if (auto it = meta.find("x-compress");
      it != meta.end() && it->second == "gzip") {
    context->set_compression_algorithm(GRPC_COMPRESS_GZIP);
  }
  if (request->fail_with_code() != 0) {
    return grpc::Status(
        static_cast<grpc::StatusCode>(request->fail_with_code()), "requested");
  }
  FillResponse(*request, response);
  return grpc::Status::OK;
}

grpc::Status EchoSyncServiceImpl::EchoStream(
    grpc::ServerContext* /*context*/,
    grpc::ServerReaderWriter<EchoResponse, EchoRequest>* stream) {
  EchoRequest request;
  EchoResponse response;
  while (stream->Read(&request)) {
    response.Clear();
    FillResponse(request, &response);
    if (!stream->Write(response)) break;
  }
  return grpc::Status::OK;
}

}  // namespace arenarpc::echo
