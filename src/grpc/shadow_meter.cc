// Shadow measurement: sampled calls parsed again in every mode on the
// background thread, into a ModeChooser per method, within the shadow
// share of the process's CPU; optionally captured for arenarpc_advise.
#include "arenarpc/grpc/internal/shadow_meter.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "arenarpc/cost_probe.h"
#include "arenarpc/grpc/stats.h"
#include "arenarpc/internal/cpu_clock.h"
#include "arenarpc/internal/mutex.h"
#include "arenarpc/mode_chooser.h"
#include "arenarpc/page_pool.h"
#include "src/grpc/capture.h"
#include "src/grpc/measured_stats.h"
#include "src/internal/background.h"

namespace arenarpc::internal {

struct ShadowMeter::State {
  State(std::string n, AllocationMode m, const ShadowOptions& o,
        const google::protobuf::Message* req,
        const google::protobuf::Message* resp, const AutoMethod* a)
      : name(std::move(n)),
        installed(m),
        options(o),
        request_prototype(req),
        response_prototype(resp),
        automatic(a),
        chooser(ModeChooserOptions{.initial = m == AllocationMode::kAuto
                                                  ? AllocationMode::kArena
                                                  : m}) {}
  AllocationMode mode() const {
    return automatic != nullptr ? automatic->mode() : installed;
  }

  const std::string name;
  const AllocationMode installed;
  const ShadowOptions options;
  const google::protobuf::Message* const request_prototype;
  const google::protobuf::Message* const response_prototype;
  const AutoMethod* const automatic;
  ModeChooser chooser;
  std::atomic<uint64_t> dropped{0};
  std::atomic<uint64_t> malformed{0};
  std::atomic<uint64_t> captured{0};
  std::atomic<uint64_t> capture_errors{0};
  // The background thread's alone.
  std::unique_ptr<CostProbe> request_probe;
  std::unique_ptr<CostProbe> response_probe;
  std::optional<Capture> capture;
  // Measuring CPU per sampled byte, learned (first guess: a few parses).
  double ns_per_byte = 60;
};

namespace {

constexpr size_t kMaxQueued = 4;
constexpr size_t kMaxQueuedBytes = size_t{16} << 20;
constexpr double kCreditNs = 5e6;
constexpr double kLearnMinBytes = 4096;

struct Sample {
  ShadowMeter::State* method;
  SampleBytes request;
  SampleBytes response;
};

class Shadow {
 public:
  static Shadow& Get() {
    static Shadow* const s = new Shadow();  // outlives every call
    return *s;
  }
  void Register(ShadowMeter::State* m) {
    MutexLock lock(&mu_);
    methods_.push_back(m);
    share_ = std::max(share_, m->options.max_cpu_share);
  }
  std::vector<ShadowMeter::State*> Methods() {
    MutexLock lock(&mu_);
    return methods_;
  }
  bool HasRoom() const {
    return queued_.load(std::memory_order_relaxed) < kMaxQueued;
  }
  bool Push(Sample&& s) {
    if (!mu_.TryLock()) return false;  // never wait on a call thread
    MutexLock lock(&mu_, std::adopt_lock);
    const size_t bytes = s.request.size() + s.response.size();
    if (queue_.size() >= kMaxQueued ||
        queued_bytes_ + bytes > kMaxQueuedBytes) {
      return false;
    }
    if (!drain_posted_) {
      drain_posted_ = PostBackground([this] { Drain(); });
      if (!drain_posted_) return false;
    }
    queued_bytes_ += bytes;
    queue_.push_back(std::move(s));
    queued_.store(queue_.size(), std::memory_order_relaxed);
    return true;
  }
  void AddSampling(double ns) {
    sampling_ns_.fetch_add(static_cast<uint64_t>(ns),
                           std::memory_order_relaxed);
  }
  double sampling_ns() const {
    return static_cast<double>(sampling_ns_.load(std::memory_order_relaxed));
  }
  void Pause(bool paused) {
    {
      MutexLock lock(&mu_);
      paused_ = paused;
    }
    if (!paused) PostBackground([this] { Drain(); });
  }
  size_t queued() const { return queued_.load(std::memory_order_relaxed); }

 private:
  void Drain() {
    for (;;) {
      std::optional<Sample> s;
      {
        MutexLock lock(&mu_);
        if (paused_ || queue_.empty()) {
          drain_posted_ = false;  // the next Push (or Pause(false)) posts
          return;
        }
        s = std::move(queue_.front());
        queue_.pop_front();
        queued_.store(queue_.size(), std::memory_order_relaxed);
        queued_bytes_ -= s->request.size() + s->response.size();
      }
      Measure(*s->method, *s);
      // The probe's arena pages go where the server's threads can use them.
      PagePool::Default().FlushThreadCache();
    }
  }
  double share() {
    MutexLock lock(&mu_);
    return share_;
  }
  void Measure(ShadowMeter::State& m, const Sample& s) {
    const double start = ThreadCpuNs();
    WriteCapture(m, s);
    // The budget: what measuring spent, with what this sample is expected
    // to cost (one large sample would overshoot a short run's share).
    const double bytes =
        static_cast<double>(s.request.size() + s.response.size());
    const double share = this->share();
    if (share < 1.0 && spent_ns_ + sampling_ns() + bytes * m.ns_per_byte >
                           share * ProcessCpuNs() + kCreditNs) {
      m.dropped.fetch_add(1, std::memory_order_relaxed);
      spent_ns_ += ThreadCpuNs() - start;
      return;
    }
    if (m.request_probe == nullptr) {
      m.request_probe = std::make_unique<CostProbe>(m.request_prototype);
      m.response_probe = std::make_unique<CostProbe>(m.response_prototype);
    }
    ModeCosts total = m.request_probe->Measure(s.request.view());
    if (total.ok) {
      const ModeCosts response = m.response_probe->Measure(s.response.view());
      total.ok = response.ok;
      for (int i = 0; i < kNumAllocationModes; ++i)
        total.ns[i] += response.ns[i];
    }
    const double spent = ThreadCpuNs() - start;
    spent_ns_ += spent;
    if (!total.ok) {
      m.malformed.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (bytes >= kLearnMinBytes) {
      m.ns_per_byte +=
          0.5 * (std::clamp(spent / bytes, 1.0, 1000.0) - m.ns_per_byte);
    }
    m.chooser.Observe(total);
  }
  static void WriteCapture(ShadowMeter::State& m, const Sample& s) {
    if (m.options.capture_dir.empty()) return;
    if (!m.capture) {
      m.capture.emplace(
          m.options.capture_dir, m.name,
          std::string(m.request_prototype->GetDescriptor()->full_name()),
          m.options.capture_max_files, m.options.capture_max_bytes);
    }
    // Only bytes that parse: the capture feeds a tool that rejects the rest.
    std::unique_ptr<google::protobuf::Message> parsed(
        m.request_prototype->New());
    if (!parsed->ParseFromArray(s.request.view().data(),
                                static_cast<int>(s.request.size()))) {
      return;
    }
    switch (m.capture->Write(s.request.view())) {
      case Capture::Result::kWritten:
        m.captured.fetch_add(1, std::memory_order_relaxed);
        break;
      case Capture::Result::kError:
        m.capture_errors.fetch_add(1, std::memory_order_relaxed);
        break;
      case Capture::Result::kFull:
        break;
    }
  }

  Mutex mu_;
  std::deque<Sample> queue_ ABSL_GUARDED_BY(mu_);
  size_t queued_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool drain_posted_ ABSL_GUARDED_BY(mu_) = false;
  bool paused_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<ShadowMeter::State*> methods_ ABSL_GUARDED_BY(mu_);
  double share_ ABSL_GUARDED_BY(mu_) = 0;  // the largest asked for
  std::atomic<size_t> queued_{0};
  std::atomic<uint64_t> sampling_ns_{0};  // call threads serializing
  double spent_ns_ = 0;                   // the background thread's
};

uint32_t NextRandom() {
  static thread_local constinit uint64_t state = 0;
  if (state == 0)
    state = reinterpret_cast<uintptr_t>(&state) * 0x9E3779B97F4A7C15ull | 1;
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return static_cast<uint32_t>(state >> 32);
}

}  // namespace

ShadowMeter::ShadowMeter(std::string name, AllocationMode installed,
                         const ShadowOptions& options,
                         const google::protobuf::Message* request_prototype,
                         const google::protobuf::Message* response_prototype,
                         const AutoMethod* automatic)
    : state_(new State(std::move(name), installed, options, request_prototype,
                       response_prototype, automatic)) {
  Shadow::Get().Register(state_);
}

bool ShadowMeter::ShouldSample() {
  const uint32_t one_in =
      static_cast<uint32_t>(std::max(state_->options.sample_one_in, 0));
  if (one_in == 0 || NextRandom() % one_in != 0) return false;
  if (Shadow::Get().HasRoom()) return true;
  state_->dropped.fetch_add(1, std::memory_order_relaxed);  // not serialized
  return false;
}

void ShadowMeter::Submit(SampleBytes request,
                         const google::protobuf::Message& response,
                         double cpu_ns) {
  const double start = ThreadCpuNs();
  SubmitBytes(std::move(request), SampleBytes::Of(response));
  Shadow::Get().AddSampling(cpu_ns + ThreadCpuNs() - start);
}

bool ShadowMeter::SubmitBytes(SampleBytes request, SampleBytes response) {
  if (Shadow::Get().Push(
          Sample{state_, std::move(request), std::move(response)})) {
    return true;
  }
  state_->dropped.fetch_add(1, std::memory_order_relaxed);
  return false;
}

SampleBytes SampleBytes::Of(const google::protobuf::Message& message) {
  SampleBytes b;
  const size_t n = message.ByteSizeLong();
  if (n >= kMappedBytes) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t len = (n + page - 1) / page * page;
    void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
      b.mapped_ = static_cast<char*>(p);
      b.mapped_size_ = len;
      b.size_ = n;
      message.SerializeWithCachedSizesToArray(
          reinterpret_cast<uint8_t*>(b.mapped_));
      return b;
    }
  }
  b.heap_.resize(n);
  message.SerializeWithCachedSizesToArray(
      reinterpret_cast<uint8_t*>(b.heap_.data()));
  return b;
}

SampleBytes& SampleBytes::operator=(SampleBytes&& o) noexcept {
  if (this == &o) return *this;
  Unmap();
  heap_ = std::move(o.heap_);
  o.heap_.clear();
  mapped_ = std::exchange(o.mapped_, nullptr);
  size_ = std::exchange(o.size_, 0);
  mapped_size_ = std::exchange(o.mapped_size_, 0);
  return *this;
}

void SampleBytes::Unmap() {
  if (mapped_ != nullptr) munmap(mapped_, mapped_size_);
  mapped_ = nullptr;
  size_ = mapped_size_ = 0;
}

void PauseShadowForTest(bool paused) { Shadow::Get().Pause(paused); }
size_t QueuedShadowSamplesForTest() { return Shadow::Get().queued(); }

// Shadow's part of the stats (src/grpc/stats.cc).
std::vector<MeasuredMethodStats> ShadowMethodStats() {
  std::vector<MeasuredMethodStats> out;
  for (ShadowMeter::State* m : Shadow::Get().Methods()) {
    const ModeChooser::Snapshot snap = m->chooser.snapshot();
    MeasuredMethodStats s;
    s.method = m->name;
    s.mode = m->mode();
    s.recommended = snap.mode;
    for (int i = 0; i < kNumAllocationModes; ++i)
      s.cost_us[i] = snap.cost_ns[i] / 1e3;
    if (snap.samples > 0) {
      s.saving_us = s.cost_us[static_cast<int>(s.mode)] -
                    s.cost_us[static_cast<int>(s.recommended)];
    }
    s.samples = snap.samples;
    s.switches = snap.switches;
    s.dropped = m->dropped.load(std::memory_order_relaxed);
    s.malformed = m->malformed.load(std::memory_order_relaxed);
    s.captured = m->captured.load(std::memory_order_relaxed);
    s.capture_errors = m->capture_errors.load(std::memory_order_relaxed);
    out.push_back(std::move(s));
  }
  return out;
}

double ShadowSamplingCpuNs() { return Shadow::Get().sampling_ns(); }

}  // namespace arenarpc::internal
