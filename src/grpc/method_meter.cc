// Measuring per method, shared by kAuto and shadow measurement: sampled
// calls are serialized on the call thread and queued; one low-priority
// thread parses them again in every mode (CostProbe), feeds each method's
// ModeChooser and writes captures.
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "arenarpc/cost_probe.h"
#include "arenarpc/grpc/server.h"
#include "arenarpc/grpc/stats.h"
#include "arenarpc/internal/mutex.h"
#include "arenarpc/mode_chooser.h"
#include "arenarpc/page_pool.h"
#include "capture.h"
#include "src/internal/background_thread.h"

namespace arenarpc::internal {

struct MethodMeter::Impl {
  Impl(std::string n, AllocationMode m, const ShadowOptions& o,
       const google::protobuf::Message* req,
       const google::protobuf::Message* resp)
      : name(std::move(n)),
        fixed_mode(m),
        shadow(o),
        request_prototype(req),
        response_prototype(resp),
        // A fixed mode starts the chooser there: what it picks is then the
        // mode that is surely cheaper than the running one.
        chooser(ModeChooserOptions{.initial = m == AllocationMode::kAuto
                                                  ? AllocationMode::kArena
                                                  : m}) {}

  const std::string name;
  const AllocationMode fixed_mode;  // kAuto: the chooser decides
  const ShadowOptions shadow;
  const google::protobuf::Message* const request_prototype;
  const google::protobuf::Message* const response_prototype;
  ModeChooser chooser;
  std::atomic<uint64_t> submitted{0};
  std::atomic<uint64_t> dropped{0};
  std::atomic<uint64_t> malformed{0};
  std::atomic<uint64_t> captured{0};
  std::atomic<uint64_t> capture_errors{0};
  // Used by the measuring thread only.
  std::unique_ptr<CostProbe> request_probe;
  std::unique_ptr<CostProbe> response_probe;
  std::optional<Capture> capture;
  // Measuring CPU per sampled byte, learned (a first guess: several parses
  // of ~10 ns per byte each).
  double ns_per_byte = 60;
};

namespace {

// What the queue may hold: a few samples, never much memory.
constexpr size_t kMaxQueued = 4;
constexpr size_t kMaxQueuedBytes = size_t{16} << 20;
// CPU the measuring thread may spend before its share is enforced, so the
// first samples of a fresh server are measured.
constexpr double kCpuCreditNs = 5e6;
constexpr double kLearnMinBytes = 4096;
// kAuto's share without shadow options: its learning phase (1 in 8 calls
// until 32 samples) must end on large messages too, each sample being
// several parses; afterwards 1 in 512 keeps it far below this.
constexpr double kAutoCpuShare = 0.25;

double CpuNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

struct Sample {
  MethodMeter::Impl* method;
  std::string request;
  std::string response;
};

class Worker {
 public:
  static Worker& Get() {
    static Worker* const worker = new Worker();  // outlives every call
    return *worker;
  }

  bool HasRoom() const { return Queued() < kMaxQueued; }
  size_t Queued() const { return queued_.load(std::memory_order_relaxed); }

  bool TryPush(Sample&& s) {
    if (!mu_.TryLock()) return false;
    MutexLock lock(&mu_, std::adopt_lock);
    const size_t bytes = s.request.size() + s.response.size();
    if (queue_.size() >= kMaxQueued ||
        queued_bytes_ + bytes > kMaxQueuedBytes) {
      return false;
    }
    if (!started_) {
      // Lazily, on a call thread: if it cannot start, nothing is measured
      // (samples are dropped; counted and logged once), calls go on.
      started_ = true;
      running_ = StartBackgroundThread("arenarpc measuring", [this] { Run(); });
    }
    if (!running_) return false;
    queued_bytes_ += bytes;
    queue_.push_back(std::move(s));
    queued_.store(queue_.size(), std::memory_order_relaxed);
    cv_.Signal();
    return true;
  }

  void Register(MethodMeter::Impl* m) {
    MutexLock lock(&methods_mu_);
    methods_.push_back(m);
    // One thread measures for every method: the largest share asked for.
    cpu_share_ = std::max(cpu_share_, m->shadow.sample_one_in > 0
                                          ? m->shadow.max_cpu_share
                                          : kAutoCpuShare);
  }
  std::vector<MethodMeter::Impl*> Methods() {
    MutexLock lock(&methods_mu_);
    return methods_;
  }
  double CpuShare() {
    MutexLock lock(&methods_mu_);
    return cpu_share_;
  }

  void AddSamplingCpu(double ns) {
    sampling_cpu_ns_.fetch_add(static_cast<uint64_t>(ns),
                               std::memory_order_relaxed);
  }
  MeasuringCost Cost() const {
    return {thread_cpu_ns_.load(std::memory_order_relaxed) / 1e9,
            sampling_cpu_ns_.load(std::memory_order_relaxed) / 1e9};
  }

  void Pause(bool paused) {
    MutexLock lock(&mu_);
    paused_ = paused;
    cv_.SignalAll();
  }

 private:
  void Run() {
    // Below the server's threads: measuring must not delay calls.
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19);
    for (;;) {
      Sample s;
      {
        MutexLock lock(&mu_);
        while (paused_ || queue_.empty()) cv_.Wait(&mu_);
        s = std::move(queue_.front());
        queue_.pop_front();
        queued_.store(queue_.size(), std::memory_order_relaxed);
        queued_bytes_ -= s.request.size() + s.response.size();
      }
      Handle(s);
      thread_cpu_ns_.store(
          static_cast<uint64_t>(CpuNs(CLOCK_THREAD_CPUTIME_ID)),
          std::memory_order_relaxed);
    }
  }

  void Handle(Sample& s) {
    MethodMeter::Impl& m = *s.method;
    if (!m.shadow.capture_dir.empty()) {
      if (!m.capture) {
        m.capture.emplace(
            m.shadow.capture_dir, m.name,
            std::string(m.request_prototype->GetDescriptor()->full_name()),
            m.shadow.capture_max_files, m.shadow.capture_max_bytes);
      }
      // Only bytes that parse: the capture feeds a tool that rejects the rest.
      if (Parses(*m.request_prototype, s.request)) {
        switch (m.capture->Write(s.request)) {
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
    }
    // The budget: this thread's CPU, with what this sample is expected to
    // cost, against the process's. Expected, not spent: one large sample
    // (tens of ms) would otherwise overshoot a short run's share.
    const double bytes =
        static_cast<double>(s.request.size() + s.response.size());
    const double mine = CpuNs(CLOCK_THREAD_CPUTIME_ID);
    const double share = CpuShare();
    if (share < 1.0 &&
        mine + bytes * m.ns_per_byte >
            share * CpuNs(CLOCK_PROCESS_CPUTIME_ID) + kCpuCreditNs) {
      m.dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (m.request_probe == nullptr) {
      m.request_probe = std::make_unique<CostProbe>(m.request_prototype);
      m.response_probe = std::make_unique<CostProbe>(m.response_prototype);
    }
    ModeCosts total = m.request_probe->Measure(s.request);
    if (total.ok) {
      const ModeCosts response = m.response_probe->Measure(s.response);
      total.ok = response.ok;
      for (int i = 0; i < kNumAllocationModes; ++i)
        total.ns[i] += response.ns[i];
    }
    // Learn what a byte costs to measure, for the budget: from samples that
    // parsed and are large enough for the per-byte rate to mean something
    // (a 4-byte sample's fixed costs would make every later one look huge).
    if (total.ok && bytes >= kLearnMinBytes) {
      const double rate = (CpuNs(CLOCK_THREAD_CPUTIME_ID) - mine) / bytes;
      m.ns_per_byte += 0.5 * (std::clamp(rate, 1.0, 1000.0) - m.ns_per_byte);
    }
    if (!total.ok) {
      m.malformed.fetch_add(1, std::memory_order_relaxed);
    } else {
      m.chooser.Observe(total);
    }
    // The probe's arena pages go where the server's threads can use them
    // (CostProbe already gave its heap copy back).
    PagePool::Default().FlushThreadCache();
  }

  static bool Parses(const google::protobuf::Message& prototype,
                     const std::string& bytes) {
    std::unique_ptr<google::protobuf::Message> m(prototype.New());
    return m->ParseFromString(bytes);
  }

  Mutex mu_;
  CondVar cv_;
  std::deque<Sample> queue_ ABSL_GUARDED_BY(mu_);
  size_t queued_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool running_ ABSL_GUARDED_BY(mu_) = false;  // the thread started
  bool paused_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<size_t> queued_{0};  // queue_.size(), read without mu_
  // What measuring costs: this thread's CPU, and the call threads' spent
  // serializing sampled calls.
  std::atomic<uint64_t> thread_cpu_ns_{0};
  std::atomic<uint64_t> sampling_cpu_ns_{0};

  Mutex methods_mu_;
  std::vector<MethodMeter::Impl*> methods_ ABSL_GUARDED_BY(methods_mu_);
  double cpu_share_ ABSL_GUARDED_BY(methods_mu_) = 0;
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

MeasuredMethodStats StatsOf(MethodMeter::Impl& m) {
  const ModeChooser::Snapshot snap = m.chooser.snapshot();
  MeasuredMethodStats s;
  s.method = m.name;
  s.automatic = m.fixed_mode == AllocationMode::kAuto;
  s.recommended = snap.mode;
  s.mode = s.automatic ? snap.mode : m.fixed_mode;
  for (int i = 0; i < kNumAllocationModes; ++i)
    s.cost_us[i] = snap.cost_ns[i] / 1e3;
  if (snap.samples > 0) {
    s.saving_us = s.cost_us[static_cast<int>(s.mode)] -
                  s.cost_us[static_cast<int>(s.recommended)];
  }
  s.samples = snap.samples;
  s.switches = snap.switches;
  s.dropped = m.dropped.load(std::memory_order_relaxed);
  s.malformed = m.malformed.load(std::memory_order_relaxed);
  s.captured = m.captured.load(std::memory_order_relaxed);
  s.capture_errors = m.capture_errors.load(std::memory_order_relaxed);
  return s;
}

}  // namespace

MethodMeter::MethodMeter(std::string name, AllocationMode mode,
                         const ShadowOptions& shadow,
                         const google::protobuf::Message* request_prototype,
                         const google::protobuf::Message* response_prototype)
    : impl_(new Impl(std::move(name), mode, shadow, request_prototype,
                     response_prototype)) {
  Worker::Get().Register(impl_);
}

AllocationMode MethodMeter::mode() const {
  return impl_->fixed_mode == AllocationMode::kAuto ? impl_->chooser.current()
                                                    : impl_->fixed_mode;
}

bool MethodMeter::ShouldSample() {
  uint32_t one_in =
      static_cast<uint32_t>(std::max(impl_->shadow.sample_one_in, 0));
  if (impl_->fixed_mode == AllocationMode::kAuto) {
    if (impl_->submitted.load(std::memory_order_relaxed) < 32) {
      one_in = 8;
    } else if (one_in == 0) {
      one_in = 512;
    }
  }
  if (one_in == 0 || NextRandom() % one_in != 0) return false;
  if (Worker::Get().HasRoom()) return true;
  impl_->dropped.fetch_add(1,
                           std::memory_order_relaxed);  // not even serialized
  return false;
}

double MethodMeter::ThreadCpuNs() { return CpuNs(CLOCK_THREAD_CPUTIME_ID); }

void MethodMeter::Submit(std::string request,
                         const google::protobuf::Message& response,
                         double cpu_ns) {
  const double start = ThreadCpuNs();
  SubmitBytes(std::move(request), response.SerializeAsString());
  Worker::Get().AddSamplingCpu(cpu_ns + ThreadCpuNs() - start);
}

bool MethodMeter::SubmitBytes(std::string request, std::string response) {
  if (Worker::Get().TryPush(
          Sample{impl_, std::move(request), std::move(response)})) {
    impl_->submitted.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  impl_->dropped.fetch_add(1, std::memory_order_relaxed);
  return false;
}

void PauseMeasuringForTest(bool paused) { Worker::Get().Pause(paused); }
size_t QueuedSamplesForTest() { return Worker::Get().Queued(); }

}  // namespace arenarpc::internal

namespace arenarpc {

std::vector<MeasuredMethodStats> GetMeasuredMethodStats() {
  std::vector<MeasuredMethodStats> out;
  for (internal::MethodMeter::Impl* m : internal::Worker::Get().Methods()) {
    out.push_back(internal::StatsOf(*m));
  }
  return out;
}

MeasuringCost GetMeasuringCost() { return internal::Worker::Get().Cost(); }

std::vector<AutoMethodStats> GetAutoMethodStats() {
  std::vector<AutoMethodStats> out;
  for (MeasuredMethodStats& s : GetMeasuredMethodStats()) {
    if (s.automatic) out.push_back(std::move(s));
  }
  return out;
}

}  // namespace arenarpc
