// In-process cost of each corpus service's requests per mode: parse, the
// handler's walk, destroy — the part of a call the memory mode changes.
//
//   corpus_bench --services=otlp_trace,health --rounds=7 --label=glibc
//
// Modes: heap (new + parse + delete: what gRPC does with no allocator),
// pb_arena (protobuf's own Arena, default options), arena (a pooled
// ScopedArena), reuse (MessagePool, the caller parses with
// protobuf's own ParseFromArray, as gRPC does), reuse_parsefrom
// (PooledMessage::ParseFrom), reuse_arena (MessagePool with instances kept
// on arenas where the pool would put them on the heap: protobuf v22+, see
// message_pool.h), clear (one heap message, Clear() and parse
// again: the plain reuse users write by hand). Modes run interleaved in each
// round (the order rotates); per mode the median over rounds of the CPU time
// per request is printed as one JSON line. A mode with the suffix _sliced
// (heap_sliced, arena_sliced, ...) parses through SlicedInput below, in
// --slice_bytes pieces, as gRPC's deserializer does, instead of from one
// flat buffer. Built three times: with glibc,
// linked with tcmalloc and linked with mimalloc (bench/corpus/corpus.py runs
// them side by side).
#include <google/protobuf/arena.h>
#include <google/protobuf/io/zero_copy_stream.h>
#include <google/protobuf/message.h>
#include <google/protobuf/stubs/common.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "arenarpc/arena.h"
#include "arenarpc/message_pool.h"
#include "corpus.h"

ABSL_FLAG(std::string, services, "",
          "comma-separated corpus services (default: all)");
ABSL_FLAG(std::string, modes, "heap,arena,reuse,reuse_parsefrom,clear",
          "modes to run");
ABSL_FLAG(int, rounds, 7, "interleaved rounds; the median is reported");
ABSL_FLAG(int, requests, 200, "requests of the service's mix per round");
ABSL_FLAG(double, min_round_ms, 40,
          "repeat the mix until a round lasts this long");
ABSL_FLAG(std::string, label, "glibc", "allocator label for the output");
ABSL_FLAG(uint64_t, seed, 1, "payload seed");
ABSL_FLAG(int, slice_bytes, 8192,
          "slice size of the _sliced modes (gRPC's TCP read slices: 8192, "
          "65536 once its read estimate grows)");

namespace {

using google::protobuf::Message;

double CpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

volatile uint64_t sink;

// A received message as gRPC 1.56 hands it to protobuf, after its
// ProtoBufferReader (include/grpcpp/support/proto_buffer_reader.h). Written
// by hand: gRPC's reader does not build against protobuf 35.1, and
// protobuf's ArrayInputStream cuts equal blocks where gRPC's first is
// shorter. Next() gives one slice, BackUp() gives the slice's unread tail back
// on the next Next(), the parse is MessageLite::ParseFromZeroCopyStream. The
// slices are the transport's TCP read slices (src/core/lib/iomgr/tcp_posix.cc:
// 8 KiB, 64 KiB once its read estimate passes 12 KiB); the first is shorter by
// the DATA frame header (9 bytes) and the message prefix (5) that share it.
// Frame headers inside the message are left out: gRPC peers raise the frame
// size with BDP probing.
class SlicedInput final : public google::protobuf::io::ZeroCopyInputStream {
 public:
  SlicedInput(const std::string& wire, int slice)
      : data_(wire.data()),
        size_(static_cast<int64_t>(wire.size())),
        slice_(std::max(slice, 15)) {}

  bool Next(const void** data, int* size) override {
    if (backup_ > 0) {
      *data = data_ + pos_ - backup_;
      *size = backup_;
      backup_ = 0;
      return true;
    }
    if (pos_ >= size_) return false;
    const int64_t n =
        std::min<int64_t>(pos_ == 0 ? slice_ - 14 : slice_, size_ - pos_);
    *data = data_ + pos_;
    *size = static_cast<int>(n);
    pos_ += n;
    return true;
  }
  void BackUp(int count) override { backup_ = count; }
  bool Skip(int count) override {
    const void* data;
    int size;
    while (Next(&data, &size)) {
      if (size >= count) {
        BackUp(size - count);
        return true;
      }
      count -= size;
    }
    return false;
  }
  int64_t ByteCount() const override { return pos_ - backup_; }

 private:
  const char* data_;
  int64_t size_;
  int slice_;
  int64_t pos_ = 0;
  int backup_ = 0;
};

class Runner {
 public:
  Runner(const arenarpc::corpus::Service& s, const Message* prototype)
      : service_(s),
        prototype_(prototype),
        pool_(prototype),
        arena_pool_(prototype, ArenaInstances()),
        clear_(prototype->New()) {}

  // Processes every request once in `mode`; returns false on a parse error.
  bool Pass(const std::string& mode, const std::vector<std::string>& requests) {
    const bool sliced = absl::EndsWith(mode, "_sliced");
    const std::string base = sliced ? mode.substr(0, mode.size() - 7) : mode;
    const int slice = absl::GetFlag(FLAGS_slice_bytes);
    auto parse = [&](Message* m, const std::string& wire) {
      if (!sliced)
        return m->ParseFromArray(wire.data(), static_cast<int>(wire.size()));
      SlicedInput in(wire, slice);
      return m->ParseFromZeroCopyStream(&in);
    };
    uint64_t sum = 0;
    for (const std::string& wire : requests) {
      if (base == "heap") {
        std::unique_ptr<Message> m(prototype_->New());
        if (!parse(m.get(), wire)) return false;
        sum += service_.walk(*m);
      } else if (base == "pb_arena") {
        google::protobuf::Arena arena;
        Message* m = prototype_->New(&arena);
        if (!parse(m, wire)) return false;
        sum += service_.walk(*m);
      } else if (base == "arena") {
        arenarpc::ScopedArena arena;
        Message* m = prototype_->New(arena.arena());
        if (!parse(m, wire)) return false;
        sum += service_.walk(*m);
      } else if (base == "reuse") {
        auto m = pool_.Acquire();
        if (!parse(m.get(), wire)) return false;
        sum += service_.walk(*m);
      } else if (base == "reuse_arena") {
        auto m = arena_pool_.Acquire();
        if (!parse(m.get(), wire)) return false;
        sum += service_.walk(*m);
      } else if (base == "reuse_parsefrom" && !sliced) {
        auto m = pool_.Acquire();
        if (!m.ParseFrom(wire)) return false;
        sum += service_.walk(*m);
      } else if (base == "clear") {
        if (!parse(clear_.get(), wire)) return false;
        sum += service_.walk(*clear_);
      } else {
        return false;
      }
    }
    sink = sum;
    return true;
  }

  const arenarpc::MessagePool<Message>& pool() const { return pool_; }

 private:
  const arenarpc::corpus::Service& service_;
  const Message* prototype_;
  static arenarpc::MessagePoolOptions ArenaInstances() {
    arenarpc::MessagePoolOptions o;
    o.arena_instances = true;
    return o;
  }

  arenarpc::MessagePool<Message> pool_;
  arenarpc::MessagePool<Message> arena_pool_;  // instances on arenas always
  std::unique_ptr<Message> clear_;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2]
                      : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  std::vector<std::string> wanted =
      absl::StrSplit(absl::GetFlag(FLAGS_services), ',', absl::SkipEmpty());
  const std::vector<std::string> modes =
      absl::StrSplit(absl::GetFlag(FLAGS_modes), ',', absl::SkipEmpty());
  const int rounds = std::max(1, absl::GetFlag(FLAGS_rounds));
  for (const arenarpc::corpus::Service& s : arenarpc::corpus::Services()) {
    if (!wanted.empty() &&
        std::find(wanted.begin(), wanted.end(), s.name) == wanted.end())
      continue;
    const Message* prototype =
        google::protobuf::MessageFactory::generated_factory()->GetPrototype(
            s.request);
    const std::vector<std::string> requests =
        s.generate(absl::GetFlag(FLAGS_seed), absl::GetFlag(FLAGS_requests));
    size_t bytes = 0;
    for (const std::string& r : requests) bytes += r.size();
    Runner runner(s, prototype);
    // Passes per round so that a round is long enough to time.
    for (const std::string& m : modes) {
      if (!runner.Pass(m, requests)) {
        std::fprintf(stderr,
                     "%s: mode %s failed (unknown mode or bad payload)\n",
                     s.name.c_str(), m.c_str());
        return 1;
      }
    }
    const double t0 = CpuNs();
    runner.Pass("heap", requests);
    const double pass_ns = std::max(CpuNs() - t0, 1.0);
    const int passes = std::max(
        1, static_cast<int>(absl::GetFlag(FLAGS_min_round_ms) * 1e6 / pass_ns));
    std::vector<std::vector<double>> per_request(modes.size());
    for (int r = 0; r < rounds; ++r) {
      for (size_t k = 0; k < modes.size(); ++k) {
        const size_t i = (k + static_cast<size_t>(r)) % modes.size();
        const double start = CpuNs();
        for (int p = 0; p < passes; ++p) runner.Pass(modes[i], requests);
        per_request[i].push_back(
            (CpuNs() - start) /
            (passes * static_cast<double>(requests.size())));
      }
    }
    // What the reuse pool decided (ReuseLimit() has no quotes or
    // backslashes: field names and fixed text) and kept (mode reuse, this
    // protobuf).
    const arenarpc::MessagePoolStats st = runner.pool().Stats();
    const std::string limit = runner.pool().ReuseLimit();
    for (size_t i = 0; i < modes.size(); ++i) {
      std::printf(
          "{\"service\":\"%s\",\"alloc\":\"%s\",\"mode\":\"%s\",\"ns_per_"
          "request\":%.0f,"
          "\"mean_request_bytes\":%zu,\"requests\":%zu,\"rounds\":%d,"
          "\"protobuf\":%d,\"reuse_limit\":\"%s\",\"kept_percent\":%llu,"
          "\"slice_bytes\":%d}\n",
          s.name.c_str(), absl::GetFlag(FLAGS_label).c_str(), modes[i].c_str(),
          Median(per_request[i]), bytes / requests.size(), requests.size(),
          rounds, GOOGLE_PROTOBUF_VERSION, limit.c_str(),
          static_cast<unsigned long long>(st.kept_percent),
          absl::GetFlag(FLAGS_slice_bytes));
    }
    std::fflush(stdout);
  }
  return 0;
}
