#include "corpus_async.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "arenarpc/grpc/async.h"
#include "corpus.h"
#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"
#include "github.com/cortexproject/cortex/pkg/distributor/distributorpb/distributor.grpc.pb.h"
#include "google/logging/v2/logging.grpc.pb.h"
#include "google/pubsub/v1/pubsub.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "opentelemetry/proto/collector/logs/v1/logs_service.grpc.pb.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.grpc.pb.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.grpc.pb.h"
#include "storage.grpc.pb.h"

namespace arenarpc::corpus {

// A tag on a completion queue: a call's state machine.
class AsyncTag {
 public:
  virtual ~AsyncTag() = default;
  virtual void Proceed(bool ok) = 0;
};

struct AsyncCorpus::Method {
  virtual ~Method() = default;
  // Posts one request for this method on `queue` (a new CallData); under
  // queue->mu, or before the queue's thread starts.
  virtual void Spawn(AsyncCorpus::Queue* queue) = 0;
};

namespace {

// The walk's result, kept alive per thread (see corpus_server.cc).
thread_local uint64_t async_walk_sink = 0;
// Start's `lines` (set before the threads start, read-only after).
bool async_lines = true;

template <class AsyncSvc, class Req, class Resp, auto kRequest>
class MethodOf final : public AsyncCorpus::Method {
 public:
  MethodOf(AsyncSvc* service, const Service& corpus,
           std::unique_ptr<AsyncMethod<Req, Resp>> pooled)
      : service_(service), corpus_(corpus), pooled_(std::move(pooled)) {}

  void Spawn(AsyncCorpus::Queue* queue) override { new CallData(this, queue); }

 private:
  // gRPC's async greeter CallData: requested -> finishing -> deleted.
  class CallData final : public AsyncTag {
   public:
    CallData(MethodOf* method, AsyncCorpus::Queue* queue)
        : method_(method), queue_(queue), responder_(&context_) {
      if (method->pooled_ != nullptr) {
        messages_ = method->pooled_->NewCall();
        request_ = messages_.request();
        response_ = messages_.response();
      } else {
        request_ = &plain_->first;
        response_ = &plain_->second;
      }
      grpc::ServerCompletionQueue* cq = queue->cq.get();
      (method->service_->*kRequest)(&context_, request_, &responder_, cq, cq,
                                    this);
    }

    void Proceed(bool ok) override {
      if (finishing_ || !ok) {  // Finish's tag, or the queue shuts down
        delete this;
        return;
      }
      if (async_lines) messages_.Arrived();  // auto's window (async.h)
      std::lock_guard<std::mutex> lock(queue_->mu);
      if (queue_->shut) {  // too late to answer: gRPC cancels the call
        delete this;
        return;
      }
      method_->Spawn(queue_);  // the next call of this method
      async_walk_sink += method_->corpus_.walk(*request_);
      method_->corpus_.respond(*request_, response_);
      finishing_ = true;
      responder_.Finish(*response_, grpc::Status::OK, this);
      if (async_lines) messages_.Answered();  // to here: Finish serialized
    }

   private:
    MethodOf* const method_;
    AsyncCorpus::Queue* const queue_;
    // Declared before the context: destroyed after it (async.h).
    CallMessages<Req, Resp> messages_;
    std::optional<std::pair<Req, Resp>> plain_ =
        method_->pooled_ == nullptr
            ? std::optional<std::pair<Req, Resp>>(std::in_place)
            : std::nullopt;
    Req* request_ = nullptr;
    Resp* response_ = nullptr;
    grpc::ServerContext context_;
    grpc::ServerAsyncResponseWriter<Resp> responder_;
    bool finishing_ = false;
  };

  AsyncSvc* const service_;
  const Service& corpus_;
  const std::unique_ptr<AsyncMethod<Req, Resp>> pooled_;  // null: plain
};

const Service& Find(const char* name) {
  const Service* s = FindService(name);
  if (s == nullptr) {
    std::fprintf(stderr, "corpus service %s missing\n", name);
    std::abort();
  }
  return *s;
}

}  // namespace

template <class AsyncSvc, class Req, class Resp, auto kRequest>
void AsyncCorpus::Add(grpc::ServerBuilder* builder,
                      const std::optional<ServerOptions>& options,
                      const char* corpus_name) {
  // One instance per gRPC service, however many of its methods are served.
  AsyncSvc* service = nullptr;
  for (auto& s : services_) {
    if (auto* same = dynamic_cast<AsyncSvc*>(s.get())) service = same;
  }
  if (service == nullptr) {
    services_.push_back(std::make_unique<AsyncSvc>());
    service = static_cast<AsyncSvc*>(services_.back().get());
    builder->RegisterService(service);
  }
  const Service& corpus = Find(corpus_name);
  std::unique_ptr<AsyncMethod<Req, Resp>> pooled;
  if (options.has_value()) {
    // corpus.method is "/pkg.Service/Method"; AsyncMethod wants no slash.
    pooled = std::make_unique<AsyncMethod<Req, Resp>>(
        std::string_view(corpus.method).substr(1), *options);
    installed_.Add(pooled->report());
  }
  methods_.push_back(std::make_unique<MethodOf<AsyncSvc, Req, Resp, kRequest>>(
      service, corpus, std::move(pooled)));
}

AsyncCorpus::AsyncCorpus(grpc::ServerBuilder* builder, int cqs,
                         std::optional<ServerOptions> options) {
  // One AsyncService per corpus service, its one served method.
  namespace health = ::grpc::health::v1;
  namespace trace = ::opentelemetry::proto::collector::trace::v1;
  namespace metrics = ::opentelemetry::proto::collector::metrics::v1;
  namespace logs = ::opentelemetry::proto::collector::logs::v1;
  namespace pubsub = ::google::pubsub::v1;
  namespace logging = ::google::logging::v2;
  Add<health::Health::AsyncService, health::HealthCheckRequest,
      health::HealthCheckResponse, &health::Health::AsyncService::RequestCheck>(
      builder, options, "health");
  Add<trace::TraceService::AsyncService, trace::ExportTraceServiceRequest,
      trace::ExportTraceServiceResponse,
      &trace::TraceService::AsyncService::RequestExport>(builder, options,
                                                         "otlp_trace");
  Add<metrics::MetricsService::AsyncService,
      metrics::ExportMetricsServiceRequest,
      metrics::ExportMetricsServiceResponse,
      &metrics::MetricsService::AsyncService::RequestExport>(builder, options,
                                                             "otlp_metrics");
  Add<logs::LogsService::AsyncService, logs::ExportLogsServiceRequest,
      logs::ExportLogsServiceResponse,
      &logs::LogsService::AsyncService::RequestExport>(builder, options,
                                                       "otlp_logs");
  Add<pubsub::Publisher::AsyncService, pubsub::PublishRequest,
      pubsub::PublishResponse,
      &pubsub::Publisher::AsyncService::RequestPublish>(builder, options,
                                                        "pubsub_publish");
  Add<logging::LoggingServiceV2::AsyncService, logging::WriteLogEntriesRequest,
      logging::WriteLogEntriesResponse,
      &logging::LoggingServiceV2::AsyncService::RequestWriteLogEntries>(
      builder, options, "logging_write");
  Add<::etcdserverpb::KV::AsyncService, ::etcdserverpb::TxnRequest,
      ::etcdserverpb::TxnResponse,
      &::etcdserverpb::KV::AsyncService::RequestTxn>(builder, options,
                                                     "etcd_txn");
  Add<::etcdserverpb::KV::AsyncService, ::etcdserverpb::RangeRequest,
      ::etcdserverpb::RangeResponse,
      &::etcdserverpb::KV::AsyncService::RequestRange>(builder, options,
                                                       "etcd_range");
  Add<::storage::StorageService::AsyncService, ::storage::WriteRequest,
      ::storage::WriteResponse,
      &::storage::StorageService::AsyncService::RequestWrite>(builder, options,
                                                              "horaedb_write");
  Add<::distributor::Distributor::AsyncService, ::cortexpb::WriteRequest,
      ::cortexpb::WriteResponse,
      &::distributor::Distributor::AsyncService::RequestPush>(builder, options,
                                                              "cortex_push");
  for (int i = 0; i < cqs; ++i) {
    queues_.push_back(std::make_unique<Queue>());
    queues_.back()->cq = builder->AddCompletionQueue();
  }
}

AsyncCorpus::~AsyncCorpus() { Stop(); }

void AsyncCorpus::Start(int pending, bool lines) {
  async_lines = lines;
  for (auto& queue : queues_) {
    for (auto& method : methods_) {
      for (int i = 0; i < pending; ++i) method->Spawn(queue.get());
    }
    threads_.emplace_back([cq = queue->cq.get(), lines] {
      void* tag = nullptr;
      bool ok = false;
      // NextTag: cq->Next, with the start of auto's window (async.h).
      while (lines ? NextTag(cq, &tag, &ok) : cq->Next(&tag, &ok)) {
        static_cast<AsyncTag*>(tag)->Proceed(ok);
      }
    });
  }
}

void AsyncCorpus::Stop() {
  if (threads_.empty()) return;
  // The server is shut down: every pending request comes back !ok.
  for (auto& queue : queues_) {
    std::lock_guard<std::mutex> lock(queue->mu);
    queue->shut = true;
    queue->cq->Shutdown();
  }
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

}  // namespace arenarpc::corpus
