#include "arenarpc/grpc/internal/shadow_meter.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <system_error>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "arenarpc/cost_probe.h"
#include "arenarpc/grpc/stats.h"
#include "arenarpc/internal/cpu_clock.h"
#include "arenarpc/internal/mutex.h"
#include "arenarpc/page_pool.h"
#include "src/grpc/measured_stats.h"
#include "src/internal/background.h"
#include "src/internal/one_in.h"

namespace arenarpc::internal {

using google::protobuf::Message;

namespace {

namespace fs = std::filesystem;

// A method's sampled requests for arenarpc_advise, one serialized message
// per file, <capture_dir>/<method>/NNNNNN.bin, the type's full name in
// <capture_dir>/<method>/TYPE. Bounded by files and bytes, counting the files
// a previous run left there; a write error stops it. Write() on the
// background thread; the counts from any thread.
class Capture {
 public:
  Capture(const ShadowOptions& options, std::string_view method,
          const Message* prototype)
      : dir_(fs::path(options.capture_dir) / DirName(method)),
        prototype_(prototype),
        max_files_(options.capture_max_files),
        max_bytes_(options.capture_max_bytes) {}

  // Only requests that parse: the capture feeds a tool that rejects the rest.
  void Write(std::string_view bytes) {
    std::unique_ptr<Message> parsed(prototype_->New());
    if (!parsed->ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
      return;
    if (!opened_) failed_ = !Open();
    if (!failed_ && (files_ >= max_files_ || next_ > 999999 ||
                     bytes_ + bytes.size() > max_bytes_)) {
      return;
    }
    if (!failed_) {
      const std::string name = absl::StrFormat("%06d", next_);
      const fs::path tmp = dir_ / ("." + name + ".tmp");
      failed_ =
          !std::ofstream(tmp, std::ios::binary | std::ios::trunc)
               .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      std::error_code ec;  // renamed whole: readers never see half a file
      if (!failed_) fs::rename(tmp, dir_ / (name + ".bin"), ec);
      failed_ = failed_ || ec;
      if (failed_) fs::remove(tmp, ec);
    }
    (failed_ ? errors : written).fetch_add(1, std::memory_order_relaxed);
    if (failed_) return;
    ++files_;
    ++next_;
    bytes_ += bytes.size();
  }

  std::atomic<uint64_t> written{0}, errors{0};

 private:
  // "/pkg.Service/Method" -> "pkg.Service.Method": one directory name.
  static std::string DirName(std::string_view method) {
    std::string out;
    for (char c : method) {
      if (c == '/' || c == ' ') {
        if (!out.empty() && out.back() != '.') out.push_back('.');
      } else {
        const bool plain =
            absl::ascii_isalnum(c) || c == '.' || c == '_' || c == '-';
        out.push_back(plain ? c : '_');
      }
    }
    while (!out.empty() && out.back() == '.') out.pop_back();
    // Never "", "." or "..": those would leave the capture directory.
    if (out.find_first_not_of('.') == std::string::npos) out = "method";
    return out;
  }
  // Creates the directory and counts what is there: a restarted server
  // continues the numbering, within the same bounds.
  bool Open() {
    opened_ = true;
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec || !(std::ofstream(dir_ / "TYPE")
                << prototype_->GetDescriptor()->full_name() << "\n")) {
      return false;
    }
    // increment(ec): the range-for form would throw.
    for (fs::directory_iterator it(dir_, ec), end; !ec && it != end;
         it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.size() != 10 || name.substr(6) != ".bin") continue;
      std::error_code size_ec;
      const uintmax_t size = it->file_size(size_ec);
      ++files_;
      bytes_ += size_ec ? 0 : size;
      next_ = std::max(next_, std::atoi(name.c_str()) + 1);
    }
    return !ec;
  }

  const fs::path dir_;
  const Message* const prototype_;
  const int max_files_;
  const uint64_t max_bytes_;
  bool opened_ = false, failed_ = false;
  int files_ = 0, next_ = 0;  // next_: the number of the next file
  uint64_t bytes_ = 0;
};

}  // namespace

struct ShadowMeter::State {
  const std::string name;
  const AllocationMode installed;
  const ShadowOptions options;
  const AutoMethod* const automatic;  // non-null: calls run in its mode
  std::atomic<uint64_t> dropped{0}, malformed{0};
  Mutex mu{};  // the background thread writes, stats read
  ModeSamples window ABSL_GUARDED_BY(mu) = {};
  ModeSamples decided ABSL_GUARDED_BY(mu) = {};    // the last decision's
  AllocationMode recommended ABSL_GUARDED_BY(mu);  // the running mode first
  uint64_t samples ABSL_GUARDED_BY(mu) = 0, switches ABSL_GUARDED_BY(mu) = 0;
  const std::unique_ptr<Capture> capture;  // null: not capturing
  // The background thread's alone.
  CostProbe request_probe, response_probe;
  double ns_per_byte = 60;  // measuring CPU, learned (first: a few parses)
};

namespace {

constexpr size_t kMaxQueued = 4;
constexpr size_t kMaxQueuedBytes = size_t{16} << 20;
constexpr double kCreditNs = 5e6;
constexpr double kLearnMinBytes = 4096;

struct Sample {
  ShadowMeter::State* method;
  SampleBytes request, response;
  size_t bytes() const { return request.size() + response.size(); }
};

std::atomic<size_t> queued{0};         // samples waiting
std::atomic<uint64_t> sampling_ns{0};  // call threads serializing
std::atomic<double> max_share{0};      // asked for; set under Shadow::mu
double spent_ns = 0;                   // the background thread's measuring

struct Shadow {
  Mutex mu;
  std::deque<Sample> queue ABSL_GUARDED_BY(mu);
  size_t queued_bytes ABSL_GUARDED_BY(mu) = 0;
  bool drain_posted ABSL_GUARDED_BY(mu) = false;
  bool paused ABSL_GUARDED_BY(mu) = false;
  std::vector<ShadowMeter::State*> methods ABSL_GUARDED_BY(mu);
};

Shadow& GetShadow() {
  static Shadow* const s = new Shadow();  // outlives every call
  return *s;
}

AllocationMode Running(const ShadowMeter::State& m) {
  return m.automatic != nullptr ? m.automatic->mode() : m.installed;
}

// ModeSamples, a decision every kPerMode samples. Each mode parsed the same
// bytes: costs per call compare (kAuto's calls differ, so it goes per byte).
void Judge(ShadowMeter::State& m, const ModeCosts& costs) {
  MutexLock lock(&m.mu);
  ++m.samples;
  for (int i = 0; i < kNumAllocationModes; ++i)
    m.window.Add(static_cast<AllocationMode>(i), costs.ns[i]);
  const std::optional<AllocationMode> pick = m.window.Cheapest(
      ModeSamples::kPerMode, Running(m), ModeSamples::kMargin);
  if (!pick) return;
  if (*pick != m.recommended) ++m.switches;
  m.recommended = *pick;
  m.decided = std::exchange(m.window, {});
}

void Measure(ShadowMeter::State& m, const Sample& s) {
  const double start = ThreadCpuNs();
  if (m.capture != nullptr) m.capture->Write(s.request.view());
  // The budget: what measuring spent, with what this sample is expected to
  // cost (one large sample would overshoot a short run's share).
  const double bytes = static_cast<double>(s.bytes());
  const double share = max_share.load();
  if (share < 1.0 && spent_ns + static_cast<double>(sampling_ns.load()) +
                             bytes * m.ns_per_byte >
                         share * ProcessCpuNs() + kCreditNs) {
    m.dropped.fetch_add(1, std::memory_order_relaxed);
    spent_ns += ThreadCpuNs() - start;
    return;
  }
  ModeCosts total = m.request_probe.Measure(s.request.view());
  if (total.ok) {
    const ModeCosts response = m.response_probe.Measure(s.response.view());
    total.ok = response.ok;
    for (int i = 0; i < kNumAllocationModes; ++i) total.ns[i] += response.ns[i];
  }
  const double spent = ThreadCpuNs() - start;
  spent_ns += spent;
  if (!total.ok) {
    m.malformed.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (bytes >= kLearnMinBytes) {
    m.ns_per_byte +=
        0.5 * (std::clamp(spent / bytes, 1.0, 1000.0) - m.ns_per_byte);
  }
  Judge(m, total);
}

void Drain() {
  Shadow& shadow = GetShadow();
  for (;;) {
    std::optional<Sample> s;
    {
      MutexLock lock(&shadow.mu);
      if (shadow.paused || shadow.queue.empty()) {
        shadow.drain_posted = false;  // the next Push (or unpause) posts
        return;
      }
      s = std::move(shadow.queue.front());
      shadow.queue.pop_front();
      queued.store(shadow.queue.size(), std::memory_order_relaxed);
      shadow.queued_bytes -= s->bytes();
    }
    Measure(*s->method, *s);
    // The probe's arena pages go where the server's threads can use them.
    PagePool::Default().FlushThreadCache();
  }
}

bool Push(Sample&& s) {
  Shadow& shadow = GetShadow();
  if (!shadow.mu.TryLock()) return false;  // never wait on a call thread
  MutexLock lock(&shadow.mu, std::adopt_lock);
  if (shadow.queue.size() >= kMaxQueued ||
      shadow.queued_bytes + s.bytes() > kMaxQueuedBytes) {
    return false;
  }
  if (!shadow.drain_posted) shadow.drain_posted = PostBackground(&Drain);
  if (!shadow.drain_posted) return false;
  shadow.queued_bytes += s.bytes();
  shadow.queue.push_back(std::move(s));
  queued.store(shadow.queue.size(), std::memory_order_relaxed);
  return true;
}

}  // namespace

ShadowMeter::ShadowMeter(std::string name, AllocationMode installed,
                         const ShadowOptions& options,
                         const Message* request_prototype,
                         const Message* response_prototype,
                         const AutoMethod* automatic)
    : state_(new State{
          .name = name,
          .installed = installed,
          .options = options,
          .automatic = automatic,
          .recommended = automatic != nullptr ? automatic->mode() : installed,
          .capture =
              options.capture_dir.empty()
                  ? nullptr
                  : std::make_unique<Capture>(options, name, request_prototype),
          .request_probe = CostProbe(request_prototype),
          .response_probe = CostProbe(response_prototype)}) {
  Shadow& shadow = GetShadow();
  MutexLock lock(&shadow.mu);
  shadow.methods.push_back(state_);
  max_share.store(std::max(max_share.load(), options.max_cpu_share));
}

bool ShadowMeter::ShouldSample() {
  const uint32_t one_in =
      static_cast<uint32_t>(std::max(state_->options.sample_one_in, 0));
  if (one_in == 0 || !OneIn(one_in)) return false;
  if (queued.load(std::memory_order_relaxed) < kMaxQueued) return true;
  state_->dropped.fetch_add(1, std::memory_order_relaxed);  // not serialized
  return false;
}

void ShadowMeter::Submit(SampleBytes request, const Message& response,
                         double cpu_ns) {
  const double start = ThreadCpuNs();
  SubmitBytes(std::move(request), SampleBytes::Of(response));
  sampling_ns.fetch_add(static_cast<uint64_t>(cpu_ns + ThreadCpuNs() - start),
                        std::memory_order_relaxed);
}

bool ShadowMeter::SubmitBytes(SampleBytes request, SampleBytes response) {
  if (Push({state_, std::move(request), std::move(response)})) return true;
  state_->dropped.fetch_add(1, std::memory_order_relaxed);
  return false;
}

SampleBytes SampleBytes::Of(const Message& message) {
  SampleBytes b;
  const size_t n = message.ByteSizeLong();
  if (n >= kMappedBytes) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t len = (n + page - 1) / page * page;
    void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) b.mapped_ = {static_cast<char*>(p), Unmap{n, len}};
  }
  if (!b.mapped()) b.heap_.resize(n);
  message.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(
      b.mapped() ? b.mapped_.get() : b.heap_.data()));
  return b;
}

void SampleBytes::Unmap::operator()(char* p) const { munmap(p, map_size); }

void PauseShadowForTest(bool paused) {
  {
    Shadow& shadow = GetShadow();
    MutexLock lock(&shadow.mu);
    shadow.paused = paused;
  }
  if (!paused) PostBackground(&Drain);
}
size_t QueuedShadowSamplesForTest() { return queued.load(); }

std::vector<MeasuredMethodStats> ShadowMethodStats() {
  std::vector<MeasuredMethodStats> out;
  std::vector<ShadowMeter::State*> methods;
  {
    Shadow& shadow = GetShadow();
    MutexLock lock(&shadow.mu);
    methods = shadow.methods;
  }
  for (ShadowMeter::State* m : methods) {
    MeasuredMethodStats& s = out.emplace_back();
    s.method = m->name;
    s.mode = Running(*m);
    {
      MutexLock lock(&m->mu);
      s.recommended = m->recommended;
      // The last decision's medians; before the first, the samples so far.
      const ModeSamples& c =
          m->samples >= ModeSamples::kPerMode ? m->decided : m->window;
      for (int i = 0; i < kNumAllocationModes; ++i)
        s.cost_us[i] =
            std::max(c.Median(static_cast<AllocationMode>(i)), 0.0) / 1e3;
      s.samples = m->samples;
      s.switches = m->switches;
    }
    if (s.samples > 0) {
      s.saving_us = s.cost_us[static_cast<int>(s.mode)] -
                    s.cost_us[static_cast<int>(s.recommended)];
    }
    s.dropped = m->dropped.load(std::memory_order_relaxed);
    s.malformed = m->malformed.load(std::memory_order_relaxed);
    if (m->capture != nullptr) {
      s.captured = m->capture->written.load(std::memory_order_relaxed);
      s.capture_errors = m->capture->errors.load(std::memory_order_relaxed);
    }
  }
  return out;
}

double ShadowSamplingCpuNs() {
  return static_cast<double>(sampling_ns.load(std::memory_order_relaxed));
}

}  // namespace arenarpc::internal
