// arenarpc_corpus_server: every corpus service (README.md) in one gRPC
// server, on the callback API, the sync API (--api=sync) or the async
// completion-queue API (--api=async, corpus_async.h), with a start-up
// allocation mode.
//
//   arenarpc_corpus_server --port=0 --mode=arena   # "listening on 127.0.0.1:N"
//   arenarpc_corpus_payload --service=pubsub_publish --count=1 --out=/tmp/p
//   ghz --insecure --proto bench/corpus/protos/google/pubsub/v1/pubsub.proto
//       --import-paths bench/corpus/protos
//       --call google.pubsub.v1.Publisher.Publish
//       -B /tmp/p/pubsub_publish_0000.bin -n 10 127.0.0.1:N
//
// --mode=none installs no allocator: plain gRPC, what users run today, the
// baseline. Any other mode goes through arenarpc::ParseAllocationMode and
// the generated Install<Service>Allocators of each service. At exit, in
// --mode=auto, prints each method's choice to stderr ("auto: <method> chose
// <mode> ..."); with --shadow_sample_one_in=N, each method's shadow
// measurement ("shadow: <method> recommends <mode> ..."), and --capture_dir
// writes sampled requests for arenarpc_advise. Each handler walks the request
// as a real handler would (the corpus walk), fills the corpus response and
// finishes OK; nothing is printed per call. SIGTERM or SIGINT shuts the server
// down and exits 0; SIGUSR1 prints arenarpc's stats (Prometheus text, ended
// by "# end of stats") to stdout and keeps serving.
#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "arenarpc/grpc/install.h"
#include "arenarpc/grpc/stats.h"
#include "corpus.h"
#include "corpus_async.h"
#include "etcd/etcdserver/etcdserverpb/rpc.arenarpc.h"
#include "github.com/cortexproject/cortex/pkg/distributor/distributorpb/distributor.arenarpc.h"
#include "google/logging/v2/logging.arenarpc.h"
#include "google/pubsub/v1/pubsub.arenarpc.h"
#include "grpc/health/v1/health.arenarpc.h"
#include "memory_trace.h"
#include "opentelemetry/proto/collector/logs/v1/logs_service.arenarpc.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.arenarpc.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.arenarpc.h"
#include "storage.arenarpc.h"

ABSL_FLAG(std::string, host, "127.0.0.1", "address to listen on");
ABSL_FLAG(int, port, 50051, "port to listen on; 0 picks a free port");
ABSL_FLAG(std::string, mode, "arena",
          "none (no allocator: plain gRPC), heap, arena, reuse or auto");
ABSL_FLAG(std::string, api, "callback",
          "server API of the services: callback, sync (Svc::Service) or "
          "async (Svc::AsyncService, completion queues)");
ABSL_FLAG(int, async_cqs, 2, "--api=async: completion queues (a thread each)");
ABSL_FLAG(int, async_pending, 4,
          "--api=async: requests posted per method per queue");
ABSL_FLAG(bool, async_lines, true,
          "--api=async: arenarpc::NextTag, Arrived() and Answered() (auto "
          "learns on the real calls); false: plain cq->Next (auto stays on "
          "arena)");
ABSL_FLAG(int, sync_min_pollers, 0,
          "--api=sync: gRPC's MIN_POLLERS (0: gRPC's default, 1)");
ABSL_FLAG(int, sync_max_pollers, 0,
          "--api=sync: gRPC's MAX_POLLERS (0: gRPC's default, 2); with the "
          "defaults gRPC's sync pool starts and ends threads under load");
ABSL_FLAG(int, max_concurrent_streams, 0,
          "gRPC's GRPC_ARG_MAX_CONCURRENT_STREAMS: calls in flight per "
          "connection, more wait in the client (0: gRPC's default, no limit)");
ABSL_FLAG(int, max_threads, 0,
          "--api=sync: a grpc::ResourceQuota thread limit; with every thread "
          "busy a call is answered RESOURCE_EXHAUSTED (0: no limit)");
ABSL_FLAG(int, resource_quota_mb, 0,
          "a grpc::ResourceQuota of this many MiB on gRPC's own buffers "
          "(0: no limit)");
ABSL_FLAG(int, max_calls_in_flight, 0,
          "per method: calls over it are answered RESOURCE_EXHAUSTED before "
          "their request is parsed (0: no limit)");
ABSL_FLAG(int, max_receive_bytes, 16 << 20,
          "largest request accepted (the corpus's largest is ~4 MB)");
ABSL_FLAG(int, shadow_sample_one_in, 0,
          "shadow measurement: measure 1 call in N in every mode (0: off)");
ABSL_FLAG(double, shadow_max_cpu_share, 0.01,
          "shadow measurement: its CPU share of the process");
ABSL_FLAG(
    std::string, capture_dir, "",
    "shadow measurement: write sampled requests here (for arenarpc_advise)");
ABSL_FLAG(int, capture_max_files, 200, "shadow measurement: files per method");
ABSL_FLAG(uint64_t, capture_max_bytes, uint64_t{64} << 20,
          "shadow measurement: bytes per method");
ABSL_FLAG(double, auto_prior_min_bytes, -1,
          "--mode=auto: AutoOptions::prior.min_bytes (0: the prior off; -1: "
          "the default)");
ABSL_FLAG(std::string, auto_decisions, "",
          "--mode=auto: AutoOptions::decisions_path (load at start, save "
          "each decision)");
ABSL_FLAG(int, memory_trace_ms, 0,
          "write a memory trace line every N ms (memory_trace.h; 0: off)");
ABSL_FLAG(std::string, memory_trace_file, "",
          "--memory_trace_ms: the file written");
ABSL_FLAG(int, shutdown_grace_ms, 5000,
          "on SIGTERM/SIGINT, time given to calls in flight");

namespace {

namespace corpus = arenarpc::corpus;
namespace otlp_collector = ::opentelemetry::proto::collector;

// Keeps the walk's result alive without sharing a cache line between
// threads (a shared counter would be a benchmark artefact).
thread_local uint64_t walk_sink = 0;

const corpus::Service& Find(const char* name) {
  const corpus::Service* s = corpus::FindService(name);
  if (s == nullptr) {
    std::fprintf(stderr, "corpus service %s missing\n", name);
    std::abort();
  }
  return *s;
}

grpc::ServerUnaryReactor* Handle(const corpus::Service& service,
                                 grpc::CallbackServerContext* context,
                                 const google::protobuf::Message& request,
                                 google::protobuf::Message* response) {
  walk_sink += service.walk(request);
  service.respond(request, response);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

// One CallbackService per corpus service, overriding the method it serves
// (the others answer UNIMPLEMENTED, as gRPC's generated defaults do).
class HealthImpl final : public ::grpc::health::v1::Health::CallbackService {
  grpc::ServerUnaryReactor* Check(
      grpc::CallbackServerContext* context,
      const ::grpc::health::v1::HealthCheckRequest* request,
      ::grpc::health::v1::HealthCheckResponse* response) override {
    return Handle(service_, context, *request, response);
  }
  const corpus::Service& service_ = Find("health");
};

class OtlpTraceImpl final
    : public otlp_collector::trace::v1::TraceService::CallbackService {
  grpc::ServerUnaryReactor* Export(
      grpc::CallbackServerContext* context,
      const otlp_collector::trace::v1::ExportTraceServiceRequest* request,
      otlp_collector::trace::v1::ExportTraceServiceResponse* response)
      override {
    return Handle(service_, context, *request, response);
  }
  const corpus::Service& service_ = Find("otlp_trace");
};

class OtlpMetricsImpl final
    : public otlp_collector::metrics::v1::MetricsService::CallbackService {
  grpc::ServerUnaryReactor* Export(
      grpc::CallbackServerContext* context,
      const otlp_collector::metrics::v1::ExportMetricsServiceRequest* request,
      otlp_collector::metrics::v1::ExportMetricsServiceResponse* response)
      override {
    return Handle(service_, context, *request, response);
  }
  const corpus::Service& service_ = Find("otlp_metrics");
};

class OtlpLogsImpl final
    : public otlp_collector::logs::v1::LogsService::CallbackService {
  grpc::ServerUnaryReactor* Export(
      grpc::CallbackServerContext* context,
      const otlp_collector::logs::v1::ExportLogsServiceRequest* request,
      otlp_collector::logs::v1::ExportLogsServiceResponse* response) override {
    return Handle(service_, context, *request, response);
  }
  const corpus::Service& service_ = Find("otlp_logs");
};

class PublisherImpl final
    : public ::google::pubsub::v1::Publisher::CallbackService {
  grpc::ServerUnaryReactor* Publish(
      grpc::CallbackServerContext* context,
      const ::google::pubsub::v1::PublishRequest* request,
      ::google::pubsub::v1::PublishResponse* response) override {
    return Handle(service_, context, *request, response);
  }
  const corpus::Service& service_ = Find("pubsub_publish");
};

class LoggingImpl final
    : public ::google::logging::v2::LoggingServiceV2::CallbackService {
  grpc::ServerUnaryReactor* WriteLogEntries(
      grpc::CallbackServerContext* context,
      const ::google::logging::v2::WriteLogEntriesRequest* request,
      ::google::logging::v2::WriteLogEntriesResponse* response) override {
    return Handle(service_, context, *request, response);
  }
  const corpus::Service& service_ = Find("logging_write");
};

class KvImpl final : public ::etcdserverpb::KV::CallbackService {
  grpc::ServerUnaryReactor* Txn(
      grpc::CallbackServerContext* context,
      const ::etcdserverpb::TxnRequest* request,
      ::etcdserverpb::TxnResponse* response) override {
    return Handle(service_, context, *request, response);
  }
  grpc::ServerUnaryReactor* Range(
      grpc::CallbackServerContext* context,
      const ::etcdserverpb::RangeRequest* request,
      ::etcdserverpb::RangeResponse* response) override {
    return Handle(range_, context, *request, response);
  }
  const corpus::Service& service_ = Find("etcd_txn");
  const corpus::Service& range_ = Find("etcd_range");
};

class HoraedbImpl final : public ::storage::StorageService::CallbackService {
  grpc::ServerUnaryReactor* Write(grpc::CallbackServerContext* context,
                                  const ::storage::WriteRequest* request,
                                  ::storage::WriteResponse* response) override {
    return Handle(service_, context, *request, response);
  }
  const corpus::Service& service_ = Find("horaedb_write");
};

class CortexImpl final : public ::distributor::Distributor::CallbackService {
  grpc::ServerUnaryReactor* Push(grpc::CallbackServerContext* context,
                                 const ::cortexpb::WriteRequest* request,
                                 ::cortexpb::WriteResponse* response) override {
    return Handle(service_, context, *request, response);
  }
  const corpus::Service& service_ = Find("cortex_push");
};

// The same services on the sync API (Svc::Service, gRPC's thread pool), as
// gRPC's own examples write them: --api=sync.
grpc::Status HandleSync(const corpus::Service& service,
                        const google::protobuf::Message& request,
                        google::protobuf::Message* response) {
  walk_sink += service.walk(request);
  service.respond(request, response);
  return grpc::Status::OK;
}

// A final sync service overriding one method; NAME is the corpus service.
#define ARENARPC_CORPUS_SYNC_IMPL(Impl, Svc, Method, Req, Resp, NAME) \
  class Impl final : public Svc::Service {                            \
    grpc::Status Method(grpc::ServerContext*, const Req* request,     \
                        Resp* response) override {                    \
      return HandleSync(service_, *request, response);                \
    }                                                                 \
    const corpus::Service& service_ = Find(NAME);                     \
  }

ARENARPC_CORPUS_SYNC_IMPL(HealthSync, ::grpc::health::v1::Health, Check,
                          ::grpc::health::v1::HealthCheckRequest,
                          ::grpc::health::v1::HealthCheckResponse, "health");
ARENARPC_CORPUS_SYNC_IMPL(OtlpTraceSync,
                          otlp_collector::trace::v1::TraceService, Export,
                          otlp_collector::trace::v1::ExportTraceServiceRequest,
                          otlp_collector::trace::v1::ExportTraceServiceResponse,
                          "otlp_trace");
ARENARPC_CORPUS_SYNC_IMPL(
    OtlpMetricsSync, otlp_collector::metrics::v1::MetricsService, Export,
    otlp_collector::metrics::v1::ExportMetricsServiceRequest,
    otlp_collector::metrics::v1::ExportMetricsServiceResponse, "otlp_metrics");
ARENARPC_CORPUS_SYNC_IMPL(OtlpLogsSync, otlp_collector::logs::v1::LogsService,
                          Export,
                          otlp_collector::logs::v1::ExportLogsServiceRequest,
                          otlp_collector::logs::v1::ExportLogsServiceResponse,
                          "otlp_logs");
ARENARPC_CORPUS_SYNC_IMPL(PublisherSync, ::google::pubsub::v1::Publisher,
                          Publish, ::google::pubsub::v1::PublishRequest,
                          ::google::pubsub::v1::PublishResponse,
                          "pubsub_publish");
ARENARPC_CORPUS_SYNC_IMPL(LoggingSync, ::google::logging::v2::LoggingServiceV2,
                          WriteLogEntries,
                          ::google::logging::v2::WriteLogEntriesRequest,
                          ::google::logging::v2::WriteLogEntriesResponse,
                          "logging_write");
// KV serves two corpus services: Txn (writes) and Range (lists).
class KvSync final : public ::etcdserverpb::KV::Service {
  grpc::Status Txn(grpc::ServerContext*,
                   const ::etcdserverpb::TxnRequest* request,
                   ::etcdserverpb::TxnResponse* response) override {
    return HandleSync(service_, *request, response);
  }
  grpc::Status Range(grpc::ServerContext*,
                     const ::etcdserverpb::RangeRequest* request,
                     ::etcdserverpb::RangeResponse* response) override {
    return HandleSync(range_, *request, response);
  }
  const corpus::Service& service_ = Find("etcd_txn");
  const corpus::Service& range_ = Find("etcd_range");
};
ARENARPC_CORPUS_SYNC_IMPL(HoraedbSync, ::storage::StorageService, Write,
                          ::storage::WriteRequest, ::storage::WriteResponse,
                          "horaedb_write");
ARENARPC_CORPUS_SYNC_IMPL(CortexSync, ::distributor::Distributor, Push,
                          ::cortexpb::WriteRequest, ::cortexpb::WriteResponse,
                          "cortex_push");
#undef ARENARPC_CORPUS_SYNC_IMPL

// gRPC's own admission knobs, as a user tunes them (plain gRPC's overload
// baseline): off unless asked for.
void AddAdmissionLimits(grpc::ServerBuilder* builder) {
  if (absl::GetFlag(FLAGS_max_concurrent_streams) > 0) {
    builder->AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                                absl::GetFlag(FLAGS_max_concurrent_streams));
  }
  const int threads = absl::GetFlag(FLAGS_max_threads);
  const int quota_mb = absl::GetFlag(FLAGS_resource_quota_mb);
  if (threads > 0 || quota_mb > 0) {
    grpc::ResourceQuota quota("arenarpc_corpus_server");
    if (threads > 0) quota.SetMaxThreads(threads);
    if (quota_mb > 0) quota.Resize(static_cast<size_t>(quota_mb) << 20);
    builder->SetResourceQuota(quota);
  }
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);

  // Block the signals in every thread (gRPC's threads inherit the mask), and
  // take them synchronously below.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  const std::string mode_name = absl::GetFlag(FLAGS_mode);
  std::optional<arenarpc::AllocationMode> mode;  // empty: none
  if (mode_name != "none") {
    absl::StatusOr<arenarpc::AllocationMode> parsed =
        arenarpc::ParseAllocationMode(mode_name);
    if (!parsed.ok()) {
      std::fprintf(stderr, "%s\n", parsed.status().ToString().c_str());
      return 2;
    }
    mode = *parsed;
  }

  // Every service on one API; the install names each method it served.
  const std::string api = absl::GetFlag(FLAGS_api);
  if (api != "callback" && api != "sync" && api != "async") {
    std::fprintf(stderr, "--api: callback, sync or async, not %s\n",
                 api.c_str());
    return 2;
  }
  HealthImpl health;
  OtlpTraceImpl otlp_trace;
  OtlpMetricsImpl otlp_metrics;
  OtlpLogsImpl otlp_logs;
  PublisherImpl publisher;
  LoggingImpl logging;
  KvImpl kv;
  HoraedbImpl horaedb;
  CortexImpl cortex;
  HealthSync health_sync;
  OtlpTraceSync otlp_trace_sync;
  OtlpMetricsSync otlp_metrics_sync;
  OtlpLogsSync otlp_logs_sync;
  PublisherSync publisher_sync;
  LoggingSync logging_sync;
  KvSync kv_sync;
  HoraedbSync horaedb_sync;
  CortexSync cortex_sync;
  // Installs on one API's services; generic over the two sets.
  auto install = [](const arenarpc::ServerOptions& options, auto& health,
                    auto& trace, auto& metrics, auto& logs, auto& publisher,
                    auto& logging, auto& kv, auto& horaedb, auto& cortex) {
    arenarpc::InstallResult r;
    r.Merge(::grpc::health::v1::InstallHealthAllocators(&health, options));
    r.Merge(otlp_collector::trace::v1::InstallTraceServiceAllocators(&trace,
                                                                     options));
    r.Merge(otlp_collector::metrics::v1::InstallMetricsServiceAllocators(
        &metrics, options));
    r.Merge(
        otlp_collector::logs::v1::InstallLogsServiceAllocators(&logs, options));
    r.Merge(
        ::google::pubsub::v1::InstallPublisherAllocators(&publisher, options));
    r.Merge(::google::logging::v2::InstallLoggingServiceV2Allocators(&logging,
                                                                     options));
    r.Merge(::etcdserverpb::InstallKVAllocators(&kv, options));
    r.Merge(::storage::InstallStorageServiceAllocators(&horaedb, options));
    r.Merge(::distributor::InstallDistributorAllocators(&cortex, options));
    return r;
  };
  std::vector<grpc::Service*> services;
  if (api == "async") {
    // registered by AsyncCorpus below
  } else if (api == "sync") {
    services = {&health_sync,    &otlp_trace_sync, &otlp_metrics_sync,
                &otlp_logs_sync, &publisher_sync,  &logging_sync,
                &kv_sync,        &horaedb_sync,    &cortex_sync};
  } else {
    services = {&health,  &otlp_trace, &otlp_metrics, &otlp_logs, &publisher,
                &logging, &kv,         &horaedb,      &cortex};
  }
  arenarpc::InstallResult installed;
  grpc::ServerBuilder builder;
  std::optional<arenarpc::ServerOptions> options;
  if (mode.has_value()) {
    options.emplace(*mode);
    options->shadow.sample_one_in = absl::GetFlag(FLAGS_shadow_sample_one_in);
    options->max_calls_in_flight = absl::GetFlag(FLAGS_max_calls_in_flight);
    options->shadow.max_cpu_share = absl::GetFlag(FLAGS_shadow_max_cpu_share);
    options->shadow.capture_dir = absl::GetFlag(FLAGS_capture_dir);
    options->shadow.capture_max_files = absl::GetFlag(FLAGS_capture_max_files);
    options->shadow.capture_max_bytes = absl::GetFlag(FLAGS_capture_max_bytes);
    if (absl::GetFlag(FLAGS_auto_prior_min_bytes) >= 0) {
      options->automatic.prior.min_bytes =
          absl::GetFlag(FLAGS_auto_prior_min_bytes);
    }
    options->automatic.decisions_path = absl::GetFlag(FLAGS_auto_decisions);
  }
  std::unique_ptr<arenarpc::corpus::AsyncCorpus> async;
  if (api == "async") {
    async = std::make_unique<arenarpc::corpus::AsyncCorpus>(
        &builder, absl::GetFlag(FLAGS_async_cqs), options);
    installed = async->installed();
  } else if (options.has_value()) {
    installed =
        api == "sync"
            ? install(*options, health_sync, otlp_trace_sync, otlp_metrics_sync,
                      otlp_logs_sync, publisher_sync, logging_sync, kv_sync,
                      horaedb_sync, cortex_sync)
            : install(*options, health, otlp_trace, otlp_metrics, otlp_logs,
                      publisher, logging, kv, horaedb, cortex);
  }
  if (mode.has_value() &&
      (!installed.ok() || installed.served() != installed.unary_methods())) {
    std::fprintf(stderr, "install: %s\n", installed.ToString().c_str());
    return 1;
  }

  int port = 0;
  const std::string host = absl::GetFlag(FLAGS_host);
  builder.AddListeningPort(absl::StrCat(host, ":", absl::GetFlag(FLAGS_port)),
                           grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(absl::GetFlag(FLAGS_max_receive_bytes));
  AddAdmissionLimits(&builder);
  if (absl::GetFlag(FLAGS_sync_min_pollers) > 0) {
    builder.SetSyncServerOption(grpc::ServerBuilder::MIN_POLLERS,
                                absl::GetFlag(FLAGS_sync_min_pollers));
  }
  if (absl::GetFlag(FLAGS_sync_max_pollers) > 0) {
    builder.SetSyncServerOption(grpc::ServerBuilder::MAX_POLLERS,
                                absl::GetFlag(FLAGS_sync_max_pollers));
  }
  for (grpc::Service* s : services) builder.RegisterService(s);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "cannot listen on %s:%d\n", host.c_str(),
                 absl::GetFlag(FLAGS_port));
    return 1;
  }
  if (async != nullptr) {
    async->Start(absl::GetFlag(FLAGS_async_pending),
                 absl::GetFlag(FLAGS_async_lines));
  }
  if (mode.has_value()) {
    std::fprintf(
        stderr, "api %s, mode %s (effective %s), allocators on %d methods\n",
        api.c_str(), std::string(arenarpc::AllocationModeName(*mode)).c_str(),
        std::string(arenarpc::AllocationModeName(
                        arenarpc::EffectiveAllocationMode(*mode)))
            .c_str(),
        installed.served());
  } else {
    std::fprintf(stderr, "api %s, mode none (plain gRPC, no allocator)\n",
                 api.c_str());
  }
  if (absl::GetFlag(FLAGS_memory_trace_ms) > 0 &&
      !arenarpc::corpus::StartMemoryTrace(
          absl::GetFlag(FLAGS_memory_trace_ms),
          absl::GetFlag(FLAGS_memory_trace_file))) {
    std::fprintf(stderr, "--memory_trace_file: cannot write %s\n",
                 absl::GetFlag(FLAGS_memory_trace_file).c_str());
    return 2;
  }
  std::printf("listening on %s:%d\n", host.c_str(), port);
  std::fflush(stdout);

  int signal_number = 0;
  while (sigwait(&signals, &signal_number) == 0 && signal_number == SIGUSR1) {
    std::fputs(arenarpc::RenderPrometheusStats().c_str(), stdout);
    std::fputs("# end of stats\n", stdout);
    std::fflush(stdout);
  }
  std::fprintf(stderr, "signal %d: shutting down\n", signal_number);
  server->Shutdown(
      std::chrono::system_clock::now() +
      std::chrono::milliseconds(absl::GetFlag(FLAGS_shutdown_grace_ms)));
  server->Wait();
  if (async != nullptr) async->Stop();
  if (!arenarpc::GetMeasuredMethodStats().empty()) {
    // What measuring cost against the whole process (one run, no noise
    // from comparing two runs): bench/advise/advise_check.py reads this line.
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    const double process_s = static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
    const arenarpc::MeasuringCost c = arenarpc::GetMeasuringCost();
    std::fprintf(
        stderr,
        "measuring cost: thread %.6f s sampling %.6f s learning %.6f "
        "s process %.6f s share %.4f\n",
        c.thread_cpu_s, c.sampling_cpu_s, c.learning_cpu_s, process_s,
        (c.thread_cpu_s + c.sampling_cpu_s + c.learning_cpu_s) / process_s);
  }
  for (const arenarpc::MeasuredMethodStats& m :
       arenarpc::GetMeasuredMethodStats()) {
    std::fprintf(
        stderr,
        "%s: %s %s %s (cost us heap %.1f arena %.1f reuse %.1f; "
        "%llu samples, %llu switches, %llu dropped, %llu malformed, "
        "%llu captured)\n",
        m.automatic ? "auto" : "shadow", m.method.c_str(),
        m.automatic ? "chose" : "recommends",
        std::string(arenarpc::AllocationModeName(m.recommended)).c_str(),
        m.cost_us[0], m.cost_us[1], m.cost_us[2],
        static_cast<unsigned long long>(m.samples),
        static_cast<unsigned long long>(m.switches),
        static_cast<unsigned long long>(m.dropped),
        static_cast<unsigned long long>(m.malformed),
        static_cast<unsigned long long>(m.captured));
    if (m.automatic) {
      std::fprintf(stderr, "decision: %s %s source %s (%llu with the prior)\n",
                   m.method.c_str(),
                   std::string(arenarpc::AllocationModeName(m.mode)).c_str(),
                   arenarpc::DecisionSourceName(m.decision_source),
                   static_cast<unsigned long long>(m.prior_decisions));
      std::fprintf(stderr,
                   "settle: %s after %llu samples %llu calls %.2f s; "
                   "%llu decisions; %llu timed calls, %llu lost, %llu failed, "
                   "%llu warming%s\n",
                   m.method.c_str(),
                   static_cast<unsigned long long>(m.settle_calls),
                   static_cast<unsigned long long>(m.settle_calls), m.settle_s,
                   static_cast<unsigned long long>(m.decisions),
                   static_cast<unsigned long long>(m.timed_calls),
                   static_cast<unsigned long long>(m.lost_calls),
                   static_cast<unsigned long long>(m.failed_calls),
                   static_cast<unsigned long long>(m.warming_calls),
                   m.untimed ? ", untimed" : "");
    }
  }
  return 0;
}
