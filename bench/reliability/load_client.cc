// arenarpc_reliability_load: open-loop load on the echo server with skewed
// request sizes and a deadline on every call, counting every call's final
// status (bench/reliability/overload.sh and soak.sh).
//
//   arenarpc_reliability_load --target=127.0.0.1:N --rps=300 --seconds=60
//       --mix=90:1,9:30,1:2900 --deadline_ms=2000
//   arenarpc_reliability_load --target=... --rps=0 --concurrency=64  # closed
//
// Why not ghz or h2load: ghz cuts calls in flight off at --duration (they
// fail client-side, counted as errors), and h2load has no deadlines and no
// gRPC status. Here every call started is waited for (its deadline bounds
// the wait), so each ends with the server's or the deadline's status.
//
// --mix is weight:scale pairs (BuildEchoRequest's scale: 1 is ~1.3 KB, 100
// ~130 KB). Calls are spread over --connections channels. Output: one
// "key value" line per figure, and per-minute OK latency percentiles.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "capacity/generic_stubs.h"
#include "echo_service.h"

ABSL_FLAG(std::string, target, "127.0.0.1:50051", "server address");
ABSL_FLAG(double, rps, 100, "calls started per second (0: closed loop)");
ABSL_FLAG(int, concurrency, 64, "closed loop: calls in flight");
ABSL_FLAG(int, seconds, 10, "how long to start calls");
ABSL_FLAG(int, deadline_ms, 2000, "deadline of every call");
ABSL_FLAG(int, connections, 4, "channels (TCP connections)");
ABSL_FLAG(std::string, mix, "90:1,9:30,1:2900", "weight:scale,...");
ABSL_FLAG(int, max_in_flight, 20000,
          "open loop: calls not started while this many are in flight "
          "(counted as not_started)");

namespace {

using Clock = std::chrono::steady_clock;

struct Stats {
  std::mutex mu;
  std::map<std::string, uint64_t> statuses;
  std::map<int, std::vector<float>> latency_ms_by_minute;  // OK calls only
};

struct Call {
  grpc::ClientContext context;
  grpc::ByteBuffer response;
  Clock::time_point start;
};

double Percentile(std::vector<float>& v, double p) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(p * v.size()));
  std::nth_element(v.begin(), v.begin() + k, v.end());
  return v[k];
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  std::vector<std::pair<int, grpc::ByteBuffer>> mix;  // cumulative weight
  int total_weight = 0;
  for (absl::string_view part : absl::StrSplit(absl::GetFlag(FLAGS_mix), ',')) {
    std::vector<absl::string_view> wv = absl::StrSplit(part, ':');
    int weight = 0, scale = 0;
    if (wv.size() != 2 || !absl::SimpleAtoi(wv[0], &weight) ||
        !absl::SimpleAtoi(wv[1], &scale) || weight <= 0 || scale <= 0) {
      std::fprintf(stderr, "bad --mix part '%.*s' (want weight:scale)\n",
                   static_cast<int>(part.size()), part.data());
      return 2;
    }
    arenarpc::echo::EchoRequest request;
    arenarpc::echo::BuildEchoRequest(scale, 7, &request);
    std::string bytes = request.SerializeAsString();
    // space_used: the parsed message's heap bytes, for the memory bound.
    std::printf("size_class scale=%d weight=%d bytes=%zu space_used=%zu\n",
                scale, weight, bytes.size(), request.SpaceUsedLong());
    grpc::Slice slice(bytes);
    total_weight += weight;
    mix.emplace_back(total_weight, grpc::ByteBuffer(&slice, 1));
  }

  std::vector<std::unique_ptr<grpc::GenericStub>> stubs =
      arenarpc::bench::GenericStubs(
          absl::GetFlag(FLAGS_target),
          std::max(1, absl::GetFlag(FLAGS_connections)));

  Stats stats;
  std::atomic<int64_t> in_flight{0};
  std::atomic<uint64_t> started{0};
  std::mt19937 rng(42);
  const auto t0 = Clock::now();
  const int seconds = absl::GetFlag(FLAGS_seconds);
  const int deadline_ms = absl::GetFlag(FLAGS_deadline_ms);
  std::mutex wake_mu;
  std::condition_variable wake;

  auto start_call = [&](uint64_t n) {
    const int pick = static_cast<int>(rng() % total_weight);
    const grpc::ByteBuffer* request = nullptr;
    for (auto& [cum, buf] : mix) {
      if (pick < cum) {
        request = &buf;
        break;
      }
    }
    auto* call = new Call;
    call->start = Clock::now();
    call->context.set_deadline(std::chrono::system_clock::now() +
                               std::chrono::milliseconds(deadline_ms));
    in_flight.fetch_add(1);
    started.fetch_add(1);
    stubs[n % stubs.size()]->UnaryCall(
        &call->context, "/arenarpc.echo.EchoService/Echo", grpc::StubOptions(),
        request, &call->response, [&, call](grpc::Status status) {
          const double ms = std::chrono::duration<double, std::milli>(
                                Clock::now() - call->start)
                                .count();
          const auto since =
              std::chrono::duration_cast<std::chrono::seconds>(call->start - t0)
                  .count();
          {
            std::lock_guard<std::mutex> lock(stats.mu);
            ++stats.statuses[std::to_string(status.error_code())];
            if (status.ok()) {
              stats.latency_ms_by_minute[static_cast<int>(since / 60)]
                  .push_back(static_cast<float>(ms));
            }
          }
          delete call;
          // Under the lock: main may return as soon as it sees 0.
          std::lock_guard<std::mutex> lock(wake_mu);
          in_flight.fetch_sub(1);
          wake.notify_all();
        });
  };

  const double rps = absl::GetFlag(FLAGS_rps);
  const auto end = t0 + std::chrono::seconds(seconds);
  uint64_t not_started = 0;
  uint64_t n = 0;
  if (rps > 0) {
    const int64_t cap = absl::GetFlag(FLAGS_max_in_flight);
    while (Clock::now() < end) {
      const double elapsed =
          std::chrono::duration<double>(Clock::now() - t0).count();
      const auto due = static_cast<uint64_t>(elapsed * rps);
      for (; n < due; ++n) {
        if (in_flight.load() >= cap) {
          ++not_started;
          continue;
        }
        start_call(n);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
  } else {
    const int concurrency = absl::GetFlag(FLAGS_concurrency);
    while (Clock::now() < end) {
      std::unique_lock<std::mutex> lock(wake_mu);
      wake.wait_for(lock, std::chrono::milliseconds(10),
                    [&] { return in_flight.load() < concurrency; });
      lock.unlock();
      while (in_flight.load() < concurrency && Clock::now() < end)
        start_call(n++);
    }
  }
  // Every call started ends: by its answer or its deadline.
  {
    std::unique_lock<std::mutex> lock(wake_mu);
    wake.wait(lock, [&] { return in_flight.load() == 0; });
  }
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();

  std::lock_guard<std::mutex> lock(stats.mu);
  uint64_t ok = stats.statuses["0"];
  std::printf("started %llu\n",
              static_cast<unsigned long long>(started.load()));
  std::printf("not_started %llu\n",
              static_cast<unsigned long long>(not_started));
  std::printf("offered_per_s %.1f\n",
              rps > 0 ? rps : static_cast<double>(started.load()) / seconds);
  std::printf("ok_per_s %.1f\n", static_cast<double>(ok) / seconds);
  std::printf("wall_s %.1f\n", wall);
  for (const auto& [code, count] : stats.statuses) {
    std::printf("status %s %llu\n", code.c_str(),
                static_cast<unsigned long long>(count));
  }
  std::vector<float> all;
  for (auto& [minute, v] : stats.latency_ms_by_minute) {
    all.insert(all.end(), v.begin(), v.end());
    std::printf("minute %d ok %zu p50_ms %.2f p99_ms %.2f\n", minute, v.size(),
                Percentile(v, 0.5), Percentile(v, 0.99));
  }
  std::printf("all ok %zu p50_ms %.2f p99_ms %.2f\n", all.size(),
              Percentile(all, 0.5), Percentile(all, 0.99));
  return 0;
}
