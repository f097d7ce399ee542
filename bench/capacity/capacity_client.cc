// arenarpc_capacity_client: an open-loop load client that is not the
// bottleneck. Sends pre-serialized requests (raw bytes through
// grpc::GenericStub: the client never builds or parses a message of the
// service; a response is counted, not parsed) at a fixed rate on a schedule
// independent of the responses, and measures each call's latency from its
// intended send time, so a server that falls behind is charged for the
// whole wait (no coordinated omission).
//
//   arenarpc_capacity_client --target=127.0.0.1:N
//       --method=/opentelemetry.proto.collector.logs.v1.LogsService/Export
//       --request=/tmp/p/otlp_logs_0042.bin --rate=400 --seconds=5
//       --warmup_s=1
//   -> one line per window ("window 3 sent 400 ok 400 failed 0 late 0
//      p50_us ... p99.9_us ..."), then "result {json}" over the measured
//      windows (after --warmup_s): sent, ok, ok_in_deadline (OK within
//      --deadline_ms of the intended send time: goodput), failed (by
//      status), not_started, late, p50/p90/p99/p99.9/max, the client's CPU
//      (getrusage) and its share of one core.
//
// Design: one sender thread sleeps until each call's intended time
// (t0 + i / rate) and starts it with the callback API (GenericStub's
// UnaryCall), round robin over --channels connections; completions run on
// gRPC's threads and record into the histogram of the call's window
// (LatencyHistogram, log-linear, 1.6 %). A call started more than --late_us
// after its intended time counts as late: many late calls mean the client,
// not the server, was the limit. At most --max_in_flight calls are in
// flight; a call due beyond that is not started (counted, and a failure of
// the run). Every call started is waited for (its deadline bounds the
// wait). Exit code: 0, or 1 if a measured call failed or was not started,
// 2 on a bad flag.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "generic_stubs.h"
#include "latency_histogram.h"

ABSL_FLAG(std::string, target, "127.0.0.1:50051", "server address");
ABSL_FLAG(std::string, method, "/arenarpc.echo.EchoService/Echo",
          "full method name, /package.Service/Method");
ABSL_FLAG(std::string, request, "",
          "file(s) of one serialized request each, comma-separated, sent in "
          "turn (empty: an empty request)");
ABSL_FLAG(double, rate, 100, "calls started per second (intended)");
ABSL_FLAG(double, seconds, 5, "measured seconds (after --warmup_s)");
ABSL_FLAG(double, warmup_s, 1, "seconds of calls at --rate before measuring");
ABSL_FLAG(double, window_s, 1, "length of a reporting window");
ABSL_FLAG(int, channels, 4, "channels (TCP connections), used in turn");
ABSL_FLAG(int, deadline_ms, 5000, "deadline of every call");
ABSL_FLAG(int, late_us, 2000,
          "a call started this long after its intended time counts as late");
ABSL_FLAG(int, max_in_flight, 20000,
          "calls due while this many are in flight are not started");
ABSL_FLAG(bool, quiet, false, "print the result line only");

namespace {

using Clock = std::chrono::steady_clock;
using arenarpc::capacity::LatencyHistogram;

struct Window {
  std::mutex mu;
  LatencyHistogram ok_us;       // latency of OK calls, from the intended time
  uint64_t ok_in_deadline = 0;  // OK within the deadline of the intended time
  uint64_t sent = 0;            // set by the sender thread only
  uint64_t late = 0;
  uint64_t not_started = 0;
  std::map<int, uint64_t> failed;  // by status code
};

struct Call {
  grpc::ClientContext context;
  grpc::ByteBuffer response;
  Clock::time_point intended;
  Window* window = nullptr;
};

double CpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// Seconds this process's threads waited on a run queue (the second field of
// /proc/self/task/*/schedstat): CPU the machine's other work took from the
// client. 0 where schedstat cannot be read.
double RunDelaySeconds() {
  double total = 0;
  std::error_code ec;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream in(task.path() / "schedstat");
    uint64_t run_ns = 0, wait_ns = 0;
    if (in >> run_ns >> wait_ns) total += static_cast<double>(wait_ns) / 1e9;
  }
  return total;
}

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  *out = s.str();
  return true;
}

// "p50_us 812 p90_us ..." (text) or "\"p50_us\":812,..." (json).
std::string Percentiles(const LatencyHistogram& h, bool json) {
  const char* names[] = {"p50_us", "p90_us", "p99_us", "p99.9_us", "max_us"};
  const uint64_t values[] = {h.Percentile(0.5), h.Percentile(0.9),
                             h.Percentile(0.99), h.Percentile(0.999), h.max()};
  std::vector<std::string> parts;
  for (int i = 0; i < 5; ++i) {
    parts.push_back(json ? absl::StrFormat("\"%s\":%d", names[i], values[i])
                         : absl::StrFormat("%s %d", names[i], values[i]));
  }
  return absl::StrJoin(parts, json ? "," : " ");
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const double rate = absl::GetFlag(FLAGS_rate);
  const double seconds = absl::GetFlag(FLAGS_seconds);
  const double warmup_s = absl::GetFlag(FLAGS_warmup_s);
  const double window_s = absl::GetFlag(FLAGS_window_s);
  if (rate <= 0 || seconds <= 0 || warmup_s < 0 || window_s <= 0 ||
      absl::GetFlag(FLAGS_channels) < 1) {
    std::fprintf(stderr,
                 "--rate, --seconds, --window_s and --channels must be > 0, "
                 "--warmup_s >= 0\n");
    return 2;
  }
  std::vector<grpc::ByteBuffer> requests;
  size_t request_bytes = 0;
  for (absl::string_view path :
       absl::StrSplit(absl::GetFlag(FLAGS_request), ',', absl::SkipEmpty())) {
    std::string bytes;
    if (!ReadFile(std::string(path), &bytes)) {
      std::fprintf(stderr, "--request: cannot read %.*s\n",
                   static_cast<int>(path.size()), path.data());
      return 2;
    }
    request_bytes += bytes.size();
    grpc::Slice slice(bytes);
    requests.emplace_back(&slice, 1);
  }
  if (requests.empty()) requests.emplace_back();  // an empty message
  request_bytes /= requests.size();

  std::vector<std::unique_ptr<grpc::GenericStub>> stubs =
      arenarpc::bench::GenericStubs(absl::GetFlag(FLAGS_target),
                                    absl::GetFlag(FLAGS_channels));

  const auto period = std::chrono::duration<double>(1.0 / rate);
  const double total_s = warmup_s + seconds;
  // Window 0: the warm-up (not measured); then --window_s windows.
  const size_t num_windows =
      1 + static_cast<size_t>(seconds / window_s + 0.999999);
  std::vector<std::unique_ptr<Window>> windows;
  for (size_t i = 0; i < num_windows; ++i) {
    windows.push_back(std::make_unique<Window>());
  }
  const std::string method = absl::GetFlag(FLAGS_method);
  const auto deadline =
      std::chrono::milliseconds(absl::GetFlag(FLAGS_deadline_ms));
  // A late start can push an OK call past its deadline counted from the
  // intended time: not goodput.
  const int64_t deadline_us = int64_t{absl::GetFlag(FLAGS_deadline_ms)} * 1000;
  const auto late_after =
      std::chrono::microseconds(absl::GetFlag(FLAGS_late_us));
  const int64_t max_in_flight = absl::GetFlag(FLAGS_max_in_flight);
  std::atomic<int64_t> in_flight{0};
  std::atomic<uint64_t> response_bytes{0};
  std::mutex done_mu;
  std::condition_variable done;

  // Connect first: a channel's connection set-up is not a call's latency.
  for (auto& stub : stubs) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + deadline);
    grpc::ByteBuffer response;
    std::mutex mu;
    std::condition_variable cv;
    bool finished = false;
    grpc::Status status;
    stub->UnaryCall(&context, method, grpc::StubOptions(), &requests[0],
                    &response, [&](grpc::Status s) {
                      std::lock_guard<std::mutex> lock(mu);
                      status = s;
                      finished = true;
                      cv.notify_all();
                    });
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return finished; });
    if (!status.ok()) {
      std::fprintf(stderr, "first call on %s failed: %d %s\n", method.c_str(),
                   status.error_code(), status.error_message().c_str());
      return 1;
    }
  }

  const double cpu_start = CpuSeconds();
  const auto t0 = Clock::now();
  double cpu_measured_start = cpu_start;
  double wait_measured_start = RunDelaySeconds();
  Clock::time_point measured_start = t0;
  bool measuring = warmup_s == 0;
  for (uint64_t i = 0;; ++i) {
    const auto intended =
        t0 + std::chrono::duration_cast<Clock::duration>(period * i);
    const double at = std::chrono::duration<double>(intended - t0).count();
    if (at >= total_s) break;
    const size_t w =
        at < warmup_s
            ? 0
            : std::min(num_windows - 1,
                       1 + static_cast<size_t>((at - warmup_s) / window_s));
    if (!measuring && w >= 1) {
      measuring = true;
      measured_start = Clock::now();
      cpu_measured_start = CpuSeconds();
      wait_measured_start = RunDelaySeconds();
    }
    std::this_thread::sleep_until(intended);
    Window* window = windows[w].get();
    if (in_flight.load(std::memory_order_relaxed) >= max_in_flight) {
      ++window->not_started;
      continue;
    }
    ++window->sent;
    if (Clock::now() - intended > late_after) ++window->late;
    auto* call = new Call;
    call->intended = intended;
    call->window = window;
    call->context.set_deadline(std::chrono::system_clock::now() + deadline);
    in_flight.fetch_add(1, std::memory_order_relaxed);
    stubs[i % stubs.size()]->UnaryCall(
        &call->context, method, grpc::StubOptions(),
        &requests[i % requests.size()], &call->response,
        [&, call](grpc::Status status) {
          const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                              Clock::now() - call->intended)
                              .count();
          response_bytes.fetch_add(call->response.Length(),
                                   std::memory_order_relaxed);
          {
            std::lock_guard<std::mutex> lock(call->window->mu);
            if (status.ok()) {
              call->window->ok_us.Record(static_cast<uint64_t>(us));
              if (us <= deadline_us) ++call->window->ok_in_deadline;
            } else {
              ++call->window->failed[status.error_code()];
            }
          }
          delete call;
          // Under the lock: main may return as soon as it sees 0.
          std::lock_guard<std::mutex> lock(done_mu);
          in_flight.fetch_sub(1, std::memory_order_relaxed);
          done.notify_all();
        });
  }
  {
    std::unique_lock<std::mutex> lock(done_mu);
    done.wait(lock, [&] { return in_flight.load() == 0; });
  }
  const double wall =
      std::chrono::duration<double>(Clock::now() - measured_start).count();
  const double cpu = CpuSeconds() - cpu_measured_start;
  const double cpu_total = CpuSeconds() - cpu_start;
  const double waited = RunDelaySeconds() - wait_measured_start;

  LatencyHistogram all;
  uint64_t sent = 0, late = 0, not_started = 0, failed = 0, in_deadline = 0;
  std::map<int, uint64_t> failed_by_code;
  for (size_t w = 0; w < num_windows; ++w) {
    Window& win = *windows[w];
    std::lock_guard<std::mutex> lock(win.mu);
    uint64_t win_failed = 0;
    for (const auto& [code, n] : win.failed) win_failed += n;
    if (!absl::GetFlag(FLAGS_quiet)) {
      std::printf("window %zu%s sent %llu ok %llu failed %llu late %llu %s\n",
                  w, w == 0 ? " (warm-up)" : "",
                  static_cast<unsigned long long>(win.sent),
                  static_cast<unsigned long long>(win.ok_us.count()),
                  static_cast<unsigned long long>(win_failed),
                  static_cast<unsigned long long>(win.late),
                  Percentiles(win.ok_us, false).c_str());
    }
    if (w == 0) continue;
    all.Merge(win.ok_us);
    sent += win.sent;
    in_deadline += win.ok_in_deadline;
    late += win.late;
    not_started += win.not_started;
    failed += win_failed;
    for (const auto& [code, n] : win.failed) failed_by_code[code] += n;
  }
  std::vector<std::string> codes;
  for (const auto& [code, n] : failed_by_code) {
    codes.push_back(absl::StrFormat("\"%d\":%d", code, n));
  }
  std::printf(
      "result {\"rate\":%.3f,\"seconds\":%.3f,\"warmup_s\":%.3f,"
      "\"channels\":%zu,\"request_bytes\":%zu,\"sent\":%llu,\"ok\":%llu,"
      "\"ok_in_deadline\":%llu,\"failed\":%llu,\"failed_by_code\":{%s},\"not_"
      "started\":%llu,"
      "\"late\":%llu,%s,\"ok_per_s\":%.2f,\"response_bytes\":%llu,"
      "\"client_cpu_s\":%.4f,\"client_cpu_total_s\":%.4f,\"wall_s\":%.3f,"
      "\"client_cpu_share\":%.4f,\"client_run_delay_share\":%.4f}\n",
      rate, seconds, warmup_s, stubs.size(), request_bytes,
      static_cast<unsigned long long>(sent),
      static_cast<unsigned long long>(all.count()),
      static_cast<unsigned long long>(in_deadline),
      static_cast<unsigned long long>(failed),
      absl::StrJoin(codes, ",").c_str(),
      static_cast<unsigned long long>(not_started),
      static_cast<unsigned long long>(late), Percentiles(all, true).c_str(),
      static_cast<double>(all.count()) / seconds,
      static_cast<unsigned long long>(response_bytes.load()), cpu, cpu_total,
      wall, wall > 0 ? cpu / wall : 0.0, wall > 0 ? waited / wall : 0.0);
  std::fflush(stdout);
  return failed == 0 && not_started == 0 ? 0 : 1;
}
