// What the sync adapter's check for calls nobody waits for costs per call
// (docs/OPERATE.md, "Overload"): a sync echo server in this process (arena
// mode), one client thread. The handler times --reps runs of the check on
// its own call's ServerContext on the thread's CPU clock; the server's CPU
// per call is the process's CPU less the client thread's and the timing
// loops'. Calls without a deadline, then with one (one clock read more).
// --cancelled: IsCancelled() too, which the adapter leaves out for its cost.
//
//   arenarpc_shed_check_bench [--calls=2000] [--reps=1000] [--scales=1,100]
//                             [--cancelled]
#include <grpcpp/grpcpp.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "arenarpc/grpc/install.h"
#include "arenarpc/grpc/internal/shed.h"
#include "echo_service.h"

ABSL_FLAG(int, calls, 2000, "calls per request size and deadline setting");
ABSL_FLAG(int, reps, 1000, "checks timed inside each call");
ABSL_FLAG(bool, cancelled, false,
          "check cancellation too (ServerContext::IsCancelled), which the "
          "sync adapter leaves out for its cost");
ABSL_FLAG(std::string, scales, "1,100",
          "request sizes (BuildEchoRequest scale: 1 ~1.3 KB, 100 ~130 KB)");

namespace {

using arenarpc::echo::EchoRequest;
using arenarpc::echo::EchoResponse;
using arenarpc::echo::EchoService;

double CpuNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

class TimingEcho final : public EchoService::Service {
 public:
  TimingEcho(int reps, bool cancelled) : reps_(reps), cancelled_(cancelled) {}
  grpc::Status Echo(grpc::ServerContext* context, const EchoRequest* request,
                    EchoResponse* response) override {
    arenarpc::internal::ShedCounters counters;
    grpc::Status answer;
    int unwanted = 0;
    const double start = CpuNs(CLOCK_THREAD_CPUTIME_ID);
    for (int i = 0; i < reps_; ++i) {
      unwanted +=
          arenarpc::internal::PastDeadline(*context, &counters, &answer);
      if (cancelled_) unwanted += context->IsCancelled();
    }
    check_ns_ += CpuNs(CLOCK_THREAD_CPUTIME_ID) - start;
    unwanted_ += unwanted;
    arenarpc::echo::FillResponse(*request, response);
    return grpc::Status::OK;
  }
  // Sums since the last Take(): CPU ns spent in the timing loops.
  double TakeCheckNs() { return check_ns_.exchange(0); }
  int unwanted() const { return unwanted_.load(); }

 private:
  const int reps_;
  const bool cancelled_;
  std::atomic<double> check_ns_{0};
  std::atomic<int> unwanted_{0};
};

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int calls = absl::GetFlag(FLAGS_calls);
  const int reps = absl::GetFlag(FLAGS_reps);
  TimingEcho service(reps, absl::GetFlag(FLAGS_cancelled));
  const arenarpc::InstallResult r =
      arenarpc::echo::InstallEchoServiceAllocators(
          &service, arenarpc::AllocationMode::kArena);
  if (!r.ok()) {
    std::fprintf(stderr, "%s\n", r.ToString().c_str());
    return 1;
  }
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.SetMaxReceiveMessageSize(64 << 20);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) return 1;
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  auto stub = EchoService::NewStub(
      grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port),
                                grpc::InsecureChannelCredentials(), args));
  std::printf(
      "scale\trequest_bytes\tdeadline\tcalls\tcheck_ns_per_call\t"
      "server_cpu_us_per_call\tcheck_share\n");
  for (const absl::string_view s :
       absl::StrSplit(absl::GetFlag(FLAGS_scales), ',', absl::SkipEmpty())) {
    int scale = 0;
    if (!absl::SimpleAtoi(s, &scale) || scale <= 0) return 2;
    EchoRequest request;
    arenarpc::echo::BuildEchoRequest(scale, /*seed=*/1, &request);
    for (const bool deadline : {false, true}) {
      auto call = [&] {
        grpc::ClientContext context;
        if (deadline) {
          context.set_deadline(std::chrono::system_clock::now() +
                               std::chrono::seconds(60));
        }
        EchoResponse response;
        return stub->Echo(&context, request, &response).ok();
      };
      for (int i = 0; i < 50; ++i) call();  // warm: pools, the learned parse
      service.TakeCheckNs();
      const double process0 = CpuNs(CLOCK_PROCESS_CPUTIME_ID);
      const double client0 = CpuNs(CLOCK_THREAD_CPUTIME_ID);
      int ok = 0;
      for (int i = 0; i < calls; ++i) ok += call();
      const double client = CpuNs(CLOCK_THREAD_CPUTIME_ID) - client0;
      const double process = CpuNs(CLOCK_PROCESS_CPUTIME_ID) - process0;
      const double check = service.TakeCheckNs();
      if (ok != calls) return 3;
      const double check_per_call = check / (double(calls) * reps);
      const double server_per_call = (process - client - check) / calls;
      std::printf("%d\t%zu\t%s\t%d\t%.1f\t%.1f\t%.5f\n", scale,
                  request.ByteSizeLong(), deadline ? "yes" : "no", calls,
                  check_per_call, server_per_call / 1000,
                  check_per_call / server_per_call);
    }
  }
  server->Shutdown();
  return service.unwanted() == 0 ? 0 : 4;  // no call was late
}
