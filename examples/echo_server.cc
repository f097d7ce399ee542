// arenarpc_echo_server: the echo service with a start-up allocation mode.
//
//   arenarpc_echo_server --port=0 --mode=arena      # prints "listening on N"
//   arenarpc_echo_server --api=sync --mode=auto     # the sync API service
//   grpcurl -plaintext -d '{"payload":["aGk="]}' 127.0.0.1:N
//       arenarpc.echo.EchoService/Echo
//   grpcurl -plaintext 127.0.0.1:N grpc.health.v1.Health/Check
//   ghz --insecure --call arenarpc.echo.EchoService.Echo -d '{}' 127.0.0.1:N
//
//   # Which mode would be cheaper, measured on live traffic; samples kept
//   # for arenarpc_advise (docs/ADVISE.md):
//   arenarpc_echo_server --mode=heap --shadow_sample_one_in=100
//       --capture_dir=/tmp/echo-samples
//
// Overload and idle memory (docs/OPERATE.md): at most
// --max_concurrent_streams calls per connection, gRPC's buffers under
// --resource_quota_mb (and, on the sync API, its threads under
// --max_threads, off by default), pooled memory under --max_pooled_mb (then
// heap messages), and after --idle_trim_ms without calls the pools and the heap
// give memory back.
//
// Server reflection and the standard health service are on, so grpcurl and
// ghz work without the .proto. SIGTERM or SIGINT shuts the server down
// (calls in flight get --shutdown_grace_ms to finish), prints the stats in
// Prometheus text format to stdout (--print_stats) and exits 0. SIGUSR1
// prints the stats now (bench/reliability/serve_load.py reads them 30 s
// after a burst) and keeps serving.
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/resource_quota.h>
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "arenarpc/grpc/install.h"
#include "arenarpc/grpc/stats.h"
#include "echo_service.h"

ABSL_FLAG(std::string, host, "127.0.0.1",
          "address to listen on (0.0.0.0 or [::] for every interface)");
ABSL_FLAG(int, port, 50051, "port to listen on; 0 picks a free port");
ABSL_FLAG(std::string, mode, "arena",
          "allocation mode of the Echo method: heap, arena, reuse or auto; "
          "none installs no allocator (plain gRPC, the baseline)");
ABSL_FLAG(std::string, api, "callback",
          "server API of the service: callback (CallbackService) or sync "
          "(Service, gRPC's sync thread pool)");
ABSL_FLAG(int, max_receive_bytes, 4 << 20, "largest request accepted");
ABSL_FLAG(
    int, shadow_sample_one_in, 0,
    "shadow measurement: measure 1 call in N in the other modes (0: off)");
ABSL_FLAG(
    std::string, capture_dir, "",
    "shadow measurement: write sampled requests here, for arenarpc_advise");
ABSL_FLAG(int, idle_trim_ms, 1000,
          "give pooled and heap memory back after this long without calls "
          "(0: never)");
ABSL_FLAG(int, max_pooled_mb, 128,
          "cap on pooled memory: above it calls get heap messages (0: none)");
ABSL_FLAG(int, max_concurrent_streams, 32,
          "calls in flight per connection; more wait in the client (0: gRPC's "
          "default, unlimited)");
ABSL_FLAG(int, resource_quota_mb, 256,
          "gRPC's memory quota for its buffers (0: unlimited)");
ABSL_FLAG(int, max_threads, 0,
          "--api=sync: the resource quota's thread limit; with every thread "
          "busy a call is answered RESOURCE_EXHAUSTED (0: no limit)");
ABSL_FLAG(int, max_calls_in_flight, 0,
          "per method: calls over it are answered RESOURCE_EXHAUSTED before "
          "their request is parsed (0: no limit)");
ABSL_FLAG(int, shutdown_grace_ms, 5000,
          "on SIGTERM/SIGINT, time given to calls in flight");
ABSL_FLAG(bool, print_stats, true,
          "print arenarpc stats (Prometheus text) to stdout on exit");

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

  const bool plain = absl::GetFlag(FLAGS_mode) == "none";
  absl::StatusOr<arenarpc::AllocationMode> mode =
      plain ? arenarpc::AllocationMode::kHeap
            : arenarpc::ParseAllocationMode(absl::GetFlag(FLAGS_mode));
  if (!mode.ok()) {
    std::fprintf(stderr, "%s (or none)\n", mode.status().ToString().c_str());
    return 2;
  }

  const std::string api = absl::GetFlag(FLAGS_api);
  if (api != "callback" && api != "sync") {
    std::fprintf(stderr, "--api: callback or sync, not %s\n", api.c_str());
    return 2;
  }
  arenarpc::echo::EchoServiceImpl callback_service;
  arenarpc::echo::EchoSyncServiceImpl sync_service;
  grpc::Service& service = api == "sync"
                               ? static_cast<grpc::Service&>(sync_service)
                               : callback_service;
  if (!plain) {
    arenarpc::ServerOptions options(*mode);
    options.shadow.sample_one_in = absl::GetFlag(FLAGS_shadow_sample_one_in);
    options.shadow.capture_dir = absl::GetFlag(FLAGS_capture_dir);
    options.idle_trim.idle_ms = absl::GetFlag(FLAGS_idle_trim_ms);
    options.max_pooled_bytes =
        static_cast<uint64_t>(absl::GetFlag(FLAGS_max_pooled_mb)) << 20;
    options.max_calls_in_flight = absl::GetFlag(FLAGS_max_calls_in_flight);
    // One line per service; it says what it served, and fails loudly
    // when it could serve nothing.
    arenarpc::InstallResult installed =
        api == "sync" ? arenarpc::echo::InstallEchoServiceAllocators(
                            &sync_service, options)
                      : arenarpc::echo::InstallEchoServiceAllocators(
                            &callback_service, options);
    std::fprintf(stderr, "%s\n", installed.ToString().c_str());
    if (!installed.ok()) return 1;
  }

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(
      absl::StrCat(absl::GetFlag(FLAGS_host), ":", absl::GetFlag(FLAGS_port)),
      grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(absl::GetFlag(FLAGS_max_receive_bytes));
  // Overload (docs/OPERATE.md): a bounded number of calls per
  // connection, and a bound on gRPC's own buffers.
  if (absl::GetFlag(FLAGS_max_concurrent_streams) > 0) {
    builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                               absl::GetFlag(FLAGS_max_concurrent_streams));
  }
  if (absl::GetFlag(FLAGS_resource_quota_mb) > 0 ||
      absl::GetFlag(FLAGS_max_threads) > 0) {
    grpc::ResourceQuota quota("arenarpc_echo_server");
    if (absl::GetFlag(FLAGS_resource_quota_mb) > 0) {
      quota.Resize(static_cast<size_t>(absl::GetFlag(FLAGS_resource_quota_mb))
                   << 20);
    }
    if (absl::GetFlag(FLAGS_max_threads) > 0) {
      quota.SetMaxThreads(absl::GetFlag(FLAGS_max_threads));
    }
    builder.SetResourceQuota(quota);
  }
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "cannot listen on %s:%d\n",
                 absl::GetFlag(FLAGS_host).c_str(), absl::GetFlag(FLAGS_port));
    return 1;
  }
  std::fprintf(
      stderr, "api %s, mode %s (effective %s)\n", api.c_str(),
      plain ? "none" : std::string(arenarpc::AllocationModeName(*mode)).c_str(),
      std::string(arenarpc::AllocationModeName(
                      arenarpc::EffectiveAllocationMode(*mode)))
          .c_str());
  std::printf("listening on %d\n", port);
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
  callback_service.Stop();
  server->Wait();
  if (absl::GetFlag(FLAGS_print_stats)) {
    std::fputs(arenarpc::RenderPrometheusStats().c_str(), stdout);
  }
  std::fflush(stdout);
  return 0;
}
