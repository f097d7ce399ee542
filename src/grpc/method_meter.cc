// Measuring per method, shared by kAuto and shadow measurement: sampled
// calls are serialized on the call thread and queued; one low-priority
// thread parses them again in every mode (CostProbe), feeds each method's
// AutoLearner (kAuto) or ModeChooser (shadow) and writes captures.
// Two budgets, never mixed: kAuto's LearningBudget (ServerOptions::automatic)
// admits one learning sample at a time, at the call (so nothing is copied
// for a sample the budget would refuse); shadow samples are checked
// against the shadow share on this thread, as before.
#include "arenarpc/grpc/internal/method_meter.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
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
#include "arenarpc/grpc/stats.h"
#include "arenarpc/internal/mutex.h"
#include "arenarpc/mode_chooser.h"
#include "arenarpc/page_pool.h"
#include "capture.h"
#include "src/grpc/auto_memory.h"
#include "src/grpc/decision_file.h"
#include "src/grpc/request_sizes.h"
#include "src/internal/background_thread.h"
#include "src/internal/mode_confirmation.h"

namespace arenarpc::internal {

namespace {
// kAuto's confirmations by the process's CPU: one method at a time.
ConfirmationSlot& ProcessConfirmationSlot() {
  static ConfirmationSlot* const slot = new ConfirmationSlot();
  return *slot;
}
}  // namespace

struct MethodMeter::Impl {
  Impl(std::string n, AllocationMode m, const ShadowOptions& o,
       const AutoOptions& a, const google::protobuf::Message* req,
       const google::protobuf::Message* resp, TrimReusePools trim)
      : name(std::move(n)),
        fixed_mode(m),
        shadow(o),
        automatic(a),
        request_prototype(req),
        response_prototype(resp),
        // A fixed mode starts the chooser there: what it picks is then the
        // mode that is surely cheaper than the running one.
        chooser(ModeChooserOptions{.initial = m == AllocationMode::kAuto
                                                  ? AllocationMode::kArena
                                                  : m}),
        learner(AutoLearnerOptions{
            .recheck_after_s = a.recheck_after_s,
            // The prior sizes real calls; paired samples time every mode.
            .prior_min_bytes = m == AllocationMode::kAuto &&
                                       a.learn == AutoLearning::kRealCalls
                                   ? a.prior.min_bytes
                                   : 0,
            .prior_heap_ns_per_byte = a.prior.heap_ns_per_byte}),
        confirm({.pairs = a.confirm.pairs,
                 .epoch_calls = a.confirm.epoch_calls,
                 .epoch_s = a.confirm.epoch_s},
                &ProcessConfirmationSlot()),
        trim_reuse(trim) {}

  bool real_calls() const {
    return is_auto() && automatic.learn == AutoLearning::kRealCalls;
  }

  bool is_auto() const { return fixed_mode == AllocationMode::kAuto; }

  const std::string name;
  const AllocationMode fixed_mode;  // kAuto: the learner decides
  const ShadowOptions shadow;
  const AutoOptions automatic;
  const google::protobuf::Message* const request_prototype;
  const google::protobuf::Message* const response_prototype;
  ModeChooser chooser;  // shadow measurement's
  AutoLearner learner;  // kAuto's
  // kRealCalls: a close decision confirmed by the process's CPU
  // (AutoOptions::confirm); the learner's decisions seen; when the first
  // confirmation ended.
  ModeConfirmation confirm;
  std::atomic<uint64_t> decisions_seen{0};
  std::atomic<double> first_confirmed_s{-1};
  // Calls until the first decision (counted only until then) and the
  // sampling CPU of the call threads not yet billed to a budget.
  std::atomic<bool> decided{false};
  std::atomic<uint64_t> calls_to_decide{0};
  std::atomic<uint64_t> unbilled_sampling_ns{0};
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
  double first_sample_s = -1;  // when learning began
  std::atomic<uint64_t> settle_calls{0};
  // kRealCalls: when learning began, what a timed call costs lately (the
  // budget's guess for the next), when a settled learner re-checks.
  std::atomic<double> first_call_s{-1};
  std::atomic<double> call_ns{0};
  std::atomic<double> recheck_s{-1};
  // kRealCalls: timed calls observed and lost (LoseTimedCall); callback
  // trials ended in this window and lost in it; set once most of a window
  // was lost (callback calls then learn on the side thread); samples the
  // side thread measured for kAuto.
  std::atomic<uint64_t> timed_calls{0};
  std::atomic<uint64_t> lost_calls{0};
  // kRealCalls: reuse calls on a new instance not observed (see EndCall),
  // in all and in the decision under way.
  std::atomic<uint64_t> warming_calls{0};
  std::atomic<int> warming_in_decision{0};
  // kRealCalls: callback and async requests' sizes (src/grpc/request_sizes.h)
  // and the observed calls whose request was walked for its size.
  RequestSizes request_sizes;
  std::atomic<uint64_t> sized_requests{0};
  Mutex window_mu;
  int window_ended ABSL_GUARDED_BY(window_mu) = 0;
  int window_lost ABSL_GUARDED_BY(window_mu) = 0;
  std::atomic<bool> callback_fallback{false};
  std::atomic<uint64_t> side_samples{0};
  // kRealCalls: async calls were seen with the user's lines (NextTag,
  // Arrived): trials are handed to them (until a fallback); timed calls
  // that did not end OK (DiscardTimedCall).
  std::atomic<bool> async_lines{false};
  std::atomic<uint64_t> failed_calls{0};
  // kAuto: what the modes it stopped running in keep, given back.
  AutoMemory memory;
  // kAuto: the learner's decisions counted when last told to the decisions
  // file (AutoOptions::decisions_path).
  std::atomic<uint64_t> decisions_filed{0};
  const TrimReusePools trim_reuse;
};

namespace {

// What the queue may hold: a few samples, never much memory.
constexpr size_t kMaxQueued = 4;
constexpr size_t kMaxQueuedBytes = size_t{16} << 20;
// CPU the measuring thread may spend before its share is enforced, so the
// first samples of a fresh server are measured.
constexpr double kCpuCreditNs = 5e6;
constexpr double kLearnMinBytes = 4096;
// How often the idle measuring thread looks at kAuto's budget and re-check
// times (a clock read or two: nothing next to the 2 %).
constexpr auto kRefreshPeriod = std::chrono::milliseconds(100);
// kRealCalls on callback calls: the window of trials looked at, and how
// many of them may be lost before the method learns on the side thread.
constexpr int kLossWindow = 32;
constexpr int kMaxLostInWindow = kLossWindow / 2;
// Reuse calls on new instances left out of a decision, at most (EndCall).
constexpr int kMaxWarmingCalls = 32;

// Async trials handed out and not yet ended: NextTag reads the thread's
// clock only while there are some.
std::atomic<int64_t> async_trials_out{0};

double CpuNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// Seconds on a steady clock: the learners' time.
double NowS() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// kAuto: gives back what the modes it stopped running in keep, after the
// learner observed a call in `trial` of `bytes` (src/grpc/auto_memory.h),
// billed to the learning budget.
void ReleaseIdleModes(MethodMeter::Impl& m, AllocationMode trial, double bytes);
// After a decision (either learner): the decisions file saves it.
void FileDecision(MethodMeter::Impl& m);

struct Sample {
  MethodMeter::Impl* method;
  SampleBytes request;
  SampleBytes response;
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
    progress_.fetch_add(1, std::memory_order_relaxed);
    queue_.push_back(std::move(s));
    queued_.store(queue_.size(), std::memory_order_relaxed);
    cv_.Signal();
    return true;
  }

  void Register(MethodMeter::Impl* m) {
    MutexLock lock(&methods_mu_);
    methods_.push_back(m);
    // Shadow measurement: one share for every method, the largest asked for.
    if (m->shadow.sample_one_in > 0) {
      cpu_share_ = std::max(cpu_share_, m->shadow.max_cpu_share);
    }
    // kAuto's own budget, process-wide: the smallest asked for.
    if (m->is_auto()) {
      const double share = std::clamp(m->automatic.max_cpu_share, 0.0, 1.0);
      auto_share_ = any_auto_ ? std::min(auto_share_, share) : share;
      any_auto_ = true;
      auto_budget_.set_share(auto_share_);
      // kRealCalls' allowance read under a larger share is read again.
      real_allowance_ns_.store(0, std::memory_order_relaxed);
    }
  }

  // A call thread's ask to take kAuto's next learning sample: true for one
  // call at a time, while the budget has room.
  bool TakeAutoTurn() {
    return auto_open_.load(std::memory_order_relaxed) &&
           auto_open_.exchange(false, std::memory_order_acquire);
  }
  void ReturnAutoTurn() { auto_open_.store(true, std::memory_order_release); }
  std::vector<MethodMeter::Impl*> Methods() {
    MutexLock lock(&methods_mu_);
    return methods_;
  }
  double CpuShare() {
    MutexLock lock(&methods_mu_);
    return cpu_share_;
  }

  void AddSamplingCpu(MethodMeter::Impl* m, double ns) {
    m->unbilled_sampling_ns.fetch_add(static_cast<uint64_t>(ns),
                                      std::memory_order_relaxed);
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

  // kRealCalls: whether a call expected to cost the budget `expected_ns`
  // may be timed now. The process's CPU is read only when the allowance
  // read last is used up (it only grows); that read is billed too.
  bool AdmitRealCall(double expected_ns) {
    if (auto_budget_.spent_ns() + expected_ns <=
        real_allowance_ns_.load(std::memory_order_relaxed)) {
      return true;
    }
    const double start = CpuNs(CLOCK_THREAD_CPUTIME_ID);
    const double allowance =
        auto_budget_.share() * CpuNs(CLOCK_PROCESS_CPUTIME_ID) + kCpuCreditNs;
    real_allowance_ns_.store(allowance, std::memory_order_relaxed);
    SpendRealCalls(CpuNs(CLOCK_THREAD_CPUTIME_ID) - start + ClockReadNs());
    return auto_budget_.spent_ns() + expected_ns <= allowance;
  }
  // kRealCalls' cost: into kAuto's budget and the measuring cost.
  void SpendRealCalls(double ns) {
    auto_budget_.Spend(ns);
    sampling_cpu_ns_.fetch_add(static_cast<uint64_t>(std::max(ns, 0.0)),
                               std::memory_order_relaxed);
  }
  // What one read of the thread's CPU clock costs (measured once).
  static double ClockReadNs() {
    static const double ns = [] {
      double best = 1e9;
      for (int i = 0; i < 16; ++i) {
        const double a = CpuNs(CLOCK_THREAD_CPUTIME_ID);
        best = std::min(best, CpuNs(CLOCK_THREAD_CPUTIME_ID) - a);
      }
      return best;
    }();
    return ns;
  }

  uint64_t Progress() const {
    return progress_.load(std::memory_order_relaxed);
  }

  double AutoBudgetSpentNs() const { return auto_budget_.spent_ns(); }
  double ShadowSpentNs() const {
    return shadow_spent_ns_.load(std::memory_order_relaxed);
  }
  double AutoLastSampleNs() const {
    return last_auto_sample_ns_.load(std::memory_order_relaxed);
  }

 private:
  void Run() {
    // Below the server's threads: measuring must not delay calls.
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19);
    for (;;) {
      std::optional<Sample> s;
      bool paused = false;
      {
        MutexLock lock(&mu_);
        if (paused_ || queue_.empty()) {
          cv_.WaitUntil(&mu_,
                        std::chrono::steady_clock::now() + kRefreshPeriod);
        }
        paused = paused_;
        if (!paused_ && !queue_.empty()) {
          s = std::move(queue_.front());
          queue_.pop_front();
          queued_.store(queue_.size(), std::memory_order_relaxed);
          queued_bytes_ -= s->request.size() + s->response.size();
        }
      }
      if (s.has_value()) {
        Handle(*s);
        s.reset();  // the sample's bytes freed before the progress shows
        progress_.fetch_add(1, std::memory_order_relaxed);
      }
      if (!paused) Refresh();
      thread_cpu_ns_.store(
          static_cast<uint64_t>(CpuNs(CLOCK_THREAD_CPUTIME_ID)),
          std::memory_order_relaxed);
    }
  }

  // Starts the re-checks that are due and lets the next kAuto learning
  // sample be taken if some method wants one and the budget has room.
  void Refresh() {
    bool any_auto = false;
    {
      MutexLock lock(&methods_mu_);
      any_auto = any_auto_;
    }
    if (!any_auto) return;
    const double now = NowS();
    bool wanted = false;
    for (MethodMeter::Impl* m : Methods()) {
      if (m->is_auto()) wanted |= m->learner.Wants(now);
    }
    auto_open_.store(
        wanted && auto_budget_.Fits(CpuNs(CLOCK_PROCESS_CPUTIME_ID),
                                    auto_budget_.expected_ns()),
        std::memory_order_release);
  }

  void Handle(Sample& s) {
    MethodMeter::Impl& m = *s.method;
    const double start = CpuNs(CLOCK_THREAD_CPUTIME_ID);
    const double sampling =
        static_cast<double>(m.unbilled_sampling_ns.exchange(0));
    WriteCapture(m, s);
    // A sample taken just before the method's async calls were seen with
    // the user's lines (NoteAsyncLines) is not mixed into their decision.
    const bool real_async =
        m.real_calls() && m.async_lines.load(std::memory_order_relaxed) &&
        !m.callback_fallback.load(std::memory_order_relaxed);
    if (m.is_auto() && m.learner.wants() && !real_async) {
      Learn(m, s);
      const double cost = CpuNs(CLOCK_THREAD_CPUTIME_ID) - start + sampling;
      auto_budget_.Spend(cost);
      auto_budget_.LearnSampleCost(cost);
      last_auto_sample_ns_.store(cost, std::memory_order_relaxed);
    } else if (m.shadow.sample_one_in > 0) {
      AddShadowSpent(sampling);
      if (!m.is_auto()) Shadow(m, s);
      AddShadowSpent(CpuNs(CLOCK_THREAD_CPUTIME_ID) - start);
    } else {
      auto_budget_.Spend(CpuNs(CLOCK_THREAD_CPUTIME_ID) - start + sampling);
    }
    // The probe's arena pages go where the server's threads can use them
    // (CostProbe already gave its heap copy back).
    PagePool::Default().FlushThreadCache();
  }

  // kAuto: the modes still measured, on these bytes, into the learner.
  static void Learn(MethodMeter::Impl& m, const Sample& s) {
    if (m.request_probe == nullptr) {
      m.request_probe = std::make_unique<CostProbe>(m.request_prototype);
      m.response_probe = std::make_unique<CostProbe>(m.response_prototype);
    }
    const double now = NowS();
    if (m.first_sample_s < 0) m.first_sample_s = now;
    const unsigned modes = m.learner.measured_mask();
    ModeCosts total = m.request_probe->Measure(s.request.view(), 1, modes);
    if (total.ok) {
      const ModeCosts response =
          m.response_probe->Measure(s.response.view(), 1, modes);
      total.ok = response.ok;
      for (int i = 0; i < kNumAllocationModes; ++i)
        total.ns[i] += response.ns[i];
    }
    if (!total.ok) {
      m.malformed.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    m.learner.Observe(total, now);
    ReleaseIdleModes(m, m.learner.current(), 0);
    m.side_samples.fetch_add(1, std::memory_order_relaxed);
    if (!m.learner.wants()) FileDecision(m);
    if (!m.decided.load(std::memory_order_relaxed) && !m.learner.wants()) {
      m.settle_calls.store(m.calls_to_decide.load(std::memory_order_relaxed),
                           std::memory_order_relaxed);
      m.decided.store(true, std::memory_order_relaxed);
    }
  }

  static void WriteCapture(MethodMeter::Impl& m, const Sample& s) {
    if (!m.shadow.capture_dir.empty()) {
      if (!m.capture) {
        m.capture.emplace(
            m.shadow.capture_dir, m.name,
            std::string(m.request_prototype->GetDescriptor()->full_name()),
            m.shadow.capture_max_files, m.shadow.capture_max_bytes);
      }
      // Only bytes that parse: the capture feeds a tool that rejects the rest.
      if (Parses(*m.request_prototype, s.request.view())) {
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
    }
  }

  void AddShadowSpent(double ns) {
    shadow_spent_ns_.store(ShadowSpentNs() + ns, std::memory_order_relaxed);
  }

  // Shadow measurement: every mode, into the method's ModeChooser, within
  // the shadow share.
  void Shadow(MethodMeter::Impl& m, const Sample& s) {
    // The budget: shadow measuring's CPU, with what this sample is expected
    // to cost, against the process's. Expected, not spent: one large sample
    // (tens of ms) would otherwise overshoot a short run's share.
    const double bytes =
        static_cast<double>(s.request.size() + s.response.size());
    const double mine = CpuNs(CLOCK_THREAD_CPUTIME_ID);
    const double share = CpuShare();
    if (share < 1.0 &&
        ShadowSpentNs() + bytes * m.ns_per_byte >
            share * CpuNs(CLOCK_PROCESS_CPUTIME_ID) + kCpuCreditNs) {
      m.dropped.fetch_add(1, std::memory_order_relaxed);
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
  }

  static bool Parses(const google::protobuf::Message& prototype,
                     std::string_view bytes) {
    std::unique_ptr<google::protobuf::Message> m(prototype.New());
    return m->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
  }

  Mutex mu_;
  CondVar cv_;
  std::deque<Sample> queue_ ABSL_GUARDED_BY(mu_);
  size_t queued_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool running_ ABSL_GUARDED_BY(mu_) = false;  // the thread started
  bool paused_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<size_t> queued_{0};  // queue_.size(), read without mu_
  // Samples queued plus samples handled (MeasuringProgress()).
  std::atomic<uint64_t> progress_{0};
  // What measuring costs: this thread's CPU, and the call threads' spent
  // serializing sampled calls.
  std::atomic<uint64_t> thread_cpu_ns_{0};
  std::atomic<uint64_t> sampling_cpu_ns_{0};
  // Written by this thread only; atomic for a test's reading.
  std::atomic<double> shadow_spent_ns_{0};
  LearningBudget auto_budget_;
  std::atomic<bool> auto_open_{true};  // kAuto's next sample may be taken
  std::atomic<double> real_allowance_ns_{kCpuCreditNs};
  std::atomic<double> last_auto_sample_ns_{0};

  Mutex methods_mu_;
  std::vector<MethodMeter::Impl*> methods_ ABSL_GUARDED_BY(methods_mu_);
  double cpu_share_ ABSL_GUARDED_BY(methods_mu_) = 0;
  double auto_share_ ABSL_GUARDED_BY(methods_mu_) = 0;
  bool any_auto_ ABSL_GUARDED_BY(methods_mu_) = false;
};

// A confirmation's clocks: the process's CPU (its read billed) and kAuto's
// budget.
class ProcessConfirmationEnv final : public ConfirmationEnv {
 public:
  double ProcessCpuNs() override {
    Worker::Get().SpendRealCalls(Worker::ClockReadNs());
    return CpuNs(CLOCK_PROCESS_CPUTIME_ID);
  }
  bool BudgetFits(double expected_ns) override {
    return Worker::Get().AdmitRealCall(expected_ns);
  }
};

// A call of a method whose confirmation is engaged: its mode, or none
// while the confirmation waits for the slot (the call goes as if settled).
std::optional<AllocationMode> ConfirmingCall(MethodMeter::Impl& m,
                                             double request_bytes) {
  ProcessConfirmationEnv env;
  const double now = NowS();
  const ConfirmationStep step =
      m.confirm.OnCall(std::max(request_bytes, 1.0), now, env);
  if (step.bill_ns > 0) Worker::Get().SpendRealCalls(step.bill_ns);
  if (step.verdict.has_value()) {
    m.learner.Confirm(*step.verdict);
    double never = -1;
    m.first_confirmed_s.compare_exchange_strong(never, now);
    return *step.verdict;
  }
  if (!step.running) return std::nullopt;
  return step.mode;
}

void FileDecision(MethodMeter::Impl& m) {
  const uint64_t decisions = m.learner.snapshot().decisions;
  if (m.decisions_filed.exchange(decisions) != decisions) DecisionSettled();
}

// After a real-call decision: confirm it if a rival is close.
void MaybeConfirm(MethodMeter::Impl& m) {
  if (m.automatic.confirm.within <= 0) return;
  const uint64_t decisions = m.learner.snapshot().decisions;
  if (m.decisions_seen.exchange(decisions) == decisions) return;
  if (const auto rival = m.learner.CloseRival(m.automatic.confirm.within)) {
    m.confirm.Request(m.learner.current(), *rival);
  }
}

void ReleaseIdleModes(MethodMeter::Impl& m, AllocationMode trial,
                      double bytes) {
  QueueModeRelease(
      m.memory.Note(m.learner.current(), !m.learner.wants(), trial, bytes),
      m.trim_reuse, [](double ns) { Worker::Get().SpendRealCalls(ns); });
}

uint32_t NextRandom() {
  static thread_local constinit uint64_t state = 0;
  if (state == 0)
    state = reinterpret_cast<uintptr_t>(&state) * 0x9E3779B97F4A7C15ull | 1;
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return static_cast<uint32_t>(state >> 32);
}

// A kAuto method's identity in a decisions file.
DecisionEntry IdentityOf(const MethodMeter::Impl& m) {
  DecisionEntry id;
  id.method = m.name;
  const google::protobuf::Descriptor* request =
      m.request_prototype->GetDescriptor();
  const google::protobuf::Descriptor* response =
      m.response_prototype->GetDescriptor();
  id.request_type = std::string(request->full_name());
  id.response_type = std::string(response->full_name());
  id.schema = SchemaFingerprint(request, response);
  id.protobuf = ProtobufVersion();
  return id;
}

// Starts a kAuto method settled in a decision from a file: its calls run
// in that mode at once, untimed, until the re-check.
bool StartSettled(MethodMeter::Impl& m, const DecisionEntry& d) {
  std::array<double, kNumAllocationModes> cost_ns;
  for (int i = 0; i < kNumAllocationModes; ++i) cost_ns[i] = d.cost_us[i] * 1e3;
  if (!m.learner.Load(d.mode, cost_ns, NowS())) return false;
  m.recheck_s.store(m.learner.next_check_s(), std::memory_order_relaxed);
  m.decided.store(true, std::memory_order_relaxed);
  return true;
}

MeasuredMethodStats StatsOf(MethodMeter::Impl& m) {
  MeasuredMethodStats s;
  if (m.is_auto()) {
    const AutoLearner::Snapshot snap = m.learner.snapshot();
    s.method = m.name;
    s.automatic = true;
    s.mode = s.recommended = snap.mode;
    for (int i = 0; i < kNumAllocationModes; ++i)
      s.cost_us[i] = snap.cost_ns[i] / 1e3;
    s.samples = snap.samples;
    s.switches = snap.switches;
    s.settled = snap.settled;
    s.decisions = snap.decisions;
    s.dropped_modes = snap.dropped_modes;
    if (snap.first_decision_s >= 0) {
      s.settle_samples = snap.first_decision_samples;
      s.settle_calls = m.settle_calls.load(std::memory_order_relaxed);
      s.settle_s =
          snap.first_decision_s - (m.real_calls() && m.first_call_s.load() >= 0
                                       ? m.first_call_s.load()
                                       : m.first_sample_s);
    }
    s.timed_calls = m.timed_calls.load(std::memory_order_relaxed);
    s.warming_calls = m.warming_calls.load(std::memory_order_relaxed);
    s.sized_requests = m.sized_requests.load(std::memory_order_relaxed);
    s.lost_calls = m.lost_calls.load(std::memory_order_relaxed);
    s.failed_calls = m.failed_calls.load(std::memory_order_relaxed);
    s.side_samples = m.side_samples.load(std::memory_order_relaxed);
    s.decision_source = snap.source;
    s.prior_decisions = snap.prior_decisions;
    s.callback_fallback = m.callback_fallback.load(std::memory_order_relaxed);
    const ModeConfirmation::Stats c = m.confirm.stats();
    s.confirmations = c.finished;
    s.confirm_switches = c.switched;
    s.confirm_ratio = c.finished > 0 ? std::exp(c.last_mean) : 0;
    s.confirm_t = c.last_t;
    if (m.first_confirmed_s.load() >= 0 && m.first_call_s.load() >= 0) {
      s.confirmed_s = m.first_confirmed_s.load() - m.first_call_s.load();
    }
    s.dropped = m.dropped.load(std::memory_order_relaxed);
    s.malformed = m.malformed.load(std::memory_order_relaxed);
    s.captured = m.captured.load(std::memory_order_relaxed);
    s.capture_errors = m.capture_errors.load(std::memory_order_relaxed);
    return s;
  }
  const ModeChooser::Snapshot snap = m.chooser.snapshot();
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
                         const google::protobuf::Message* response_prototype,
                         const AutoOptions& automatic, void (*trim_reuse)())
    : impl_(new Impl(std::move(name), mode, shadow, automatic,
                     request_prototype, response_prototype, trim_reuse)) {
  Worker::Get().Register(impl_);
  if (impl_->is_auto() && !automatic.decisions_path.empty()) {
    if (const std::optional<DecisionEntry> d =
            DecisionAtInstall(automatic.decisions_path,
                              automatic.save_decisions, IdentityOf(*impl_))) {
      StartSettled(*impl_, *d);
    }
  }
}

std::vector<DecisionEntry> AutoMethodDecisions() {
  std::vector<DecisionEntry> out;
  for (MethodMeter::Impl* m : Worker::Get().Methods()) {
    if (!m->is_auto()) continue;
    DecisionEntry e = IdentityOf(*m);
    const AutoLearner::Snapshot snap = m->learner.snapshot();
    e.source = snap.source;
    e.mode = snap.mode;
    for (int i = 0; i < kNumAllocationModes; ++i) {
      e.cost_us[i] = snap.cost_ns[i] / 1e3;
    }
    e.calls = snap.samples;
    out.push_back(std::move(e));
  }
  return out;
}

bool LoadAutoMethodDecision(const DecisionEntry& entry) {
  for (MethodMeter::Impl* m : Worker::Get().Methods()) {
    if (m->is_auto() && m->name == entry.method) {
      return StartSettled(*m, entry);
    }
  }
  return false;
}

AllocationMode MethodMeter::mode() const {
  return impl_->is_auto() ? impl_->learner.current() : impl_->fixed_mode;
}

bool MethodMeter::ShouldSample(bool auto_side) {
  Impl& m = *impl_;
  if (m.is_auto() && auto_side) {
    if (!m.decided.load(std::memory_order_relaxed)) {
      m.calls_to_decide.fetch_add(1, std::memory_order_relaxed);
    }
    // While learning, the next call after the budget allows one; settled,
    // none until a re-check.
    if (m.learner.wants() && Worker::Get().TakeAutoTurn()) {
      if (Worker::Get().HasRoom()) return true;
      Worker::Get().ReturnAutoTurn();
    }
  }
  const uint32_t one_in =
      static_cast<uint32_t>(std::max(m.shadow.sample_one_in, 0));
  if (one_in == 0 || NextRandom() % one_in != 0) return false;
  if (Worker::Get().HasRoom()) return true;
  impl_->dropped.fetch_add(1,
                           std::memory_order_relaxed);  // not even serialized
  return false;
}

double MethodMeter::ThreadCpuNs() { return CpuNs(CLOCK_THREAD_CPUTIME_ID); }

uint64_t AssignCallThread() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

bool MethodMeter::LearnsOnCall(double request_bytes) const {
  if (!impl_->real_calls()) return false;
  if (request_bytes >= 0) return true;  // sync
  if (request_bytes == kCallAsync &&
      !impl_->async_lines.load(std::memory_order_relaxed)) {
    return false;
  }
  return (request_bytes == kCallBytesAtRelease ||
          request_bytes == kCallAsync) &&
         !impl_->callback_fallback.load(std::memory_order_relaxed);
}

void MethodMeter::NoteAsyncLines() {
  Impl& m = *impl_;
  if (!m.real_calls() || m.async_lines.load(std::memory_order_relaxed)) return;
  if (m.async_lines.exchange(true, std::memory_order_relaxed)) return;
  // The side thread's samples so far are paired, the async trials will be
  // real calls: a decision does not mix the two.
  if (m.side_samples.load(std::memory_order_relaxed) > 0) {
    m.learner.RestartDecision();
  }
}

AllocationMode MethodMeter::ModeForCall(double request_bytes,
                                        CallTiming* timing) {
  Impl& m = *impl_;
  // A confirmation holding the slot ends even if the method stopped
  // learning on its calls meanwhile (a callback fallback).
  if (m.confirm.engaged() && m.real_calls()) [[unlikely]] {
    if (const auto confirming = ConfirmingCall(m, request_bytes)) {
      return *confirming;
    }
  }
  if (!LearnsOnCall(request_bytes)) return mode();
  if (!m.learner.wants()) {
    // Settled: one steady-clock read a call, for the re-check.
    const double recheck = m.recheck_s.load(std::memory_order_relaxed);
    if (recheck < 0 || NowS() < recheck || !m.learner.Wants(NowS())) {
      return m.learner.current();
    }
    m.request_sizes.Forget();  // a re-check: traffic may have changed
    m.warming_in_decision.store(0, std::memory_order_relaxed);
  }
  if (!m.decided.load(std::memory_order_relaxed)) {
    m.calls_to_decide.fetch_add(1, std::memory_order_relaxed);
  }
  // Learning again: a confirmation waiting for the slot is moot.
  if (m.confirm.engaged()) m.confirm.Cancel();
  const AllocationMode trial = m.learner.NextTrialMode();
  const double expected =
      m.learner.excess_share(trial) * m.call_ns.load(std::memory_order_relaxed);
  if (!Worker::Get().AdmitRealCall(expected)) {
    m.learner.CancelTrial(trial);
    return m.learner.current();
  }
  double never = -1;
  m.first_call_s.compare_exchange_strong(never, NowS(),
                                         std::memory_order_relaxed);
  timing->meter = this;
  timing->mode = trial;
  timing->async = request_bytes == kCallAsync;
  timing->callback = request_bytes == kCallBytesAtRelease;
  timing->bytes = std::max(request_bytes, 0.0);
  timing->request_bytes_at_release = false;
  timing->request_bytes = -1;
  if (request_bytes < 0) {  // callback or async: sized at release, or known
    const double known = m.request_sizes.ForCall(NextRandom());
    timing->request_bytes_at_release = known < 0;
    if (known >= 0) timing->bytes = known;
  }
  timing->start_ns = ThreadCpuNs();
  return trial;
}

void MethodMeter::EndTimedCall(const CallTiming& timing) {
  const double end = ThreadCpuNs();
  EndCall(timing, end - timing.start_ns - timing.excluded_ns, end);
}

void MethodMeter::EndAsyncCall(const CallTiming& timing, double cost_ns) {
  EndCall(timing, cost_ns, ThreadCpuNs());
}

void MethodMeter::EndCall(const CallTiming& timing, double cost, double end) {
  Impl& m = *impl_;
  if (timing.callback || timing.async) {
    // A callback or async call: counted in its window; not observed once
    // the method learns on the side thread (the learner restarted for
    // paired samples).
    if (m.callback_fallback.load(std::memory_order_relaxed)) {
      LoseTimedCall(timing);
      return;
    }
    CountWindowTrial(timing, /*lost=*/false);
  }
  const double now = NowS();
  if (timing.request_bytes >= 0) {
    m.sized_requests.fetch_add(1, std::memory_order_relaxed);
    m.request_sizes.Note(timing.request_bytes);
  }
  // A reuse call on an instance its pool built for it costs what a fresh
  // arena does; the calls after it do not. Reuse's trials are its only
  // calls while it learns, so where many calls are held at once (an async
  // server's posted calls) many trials are such calls: 10 per decision on
  // Cortex's async server (docs/raw/auto_warming/). Handed out again
  // instead, up to kMaxWarmingCalls a decision: a pool that never warms is
  // measured as it is.
  const bool warming = timing.new_instance &&
                       timing.mode == AllocationMode::kReuse &&
                       m.learner.wants() &&
                       m.warming_in_decision.fetch_add(
                           1, std::memory_order_relaxed) < kMaxWarmingCalls;
  if (warming) {
    m.warming_calls.fetch_add(1, std::memory_order_relaxed);
    m.learner.CancelTrial(timing.mode);
  } else {
    m.timed_calls.fetch_add(1, std::memory_order_relaxed);
    m.learner.ObserveCall(timing.mode, cost, timing.bytes, now);
  }
  ReleaseIdleModes(m, timing.mode, timing.bytes);
  // What timed calls cost lately, the budget's guess for the next: not a
  // warming call's one-off cost.
  const double avg = m.call_ns.load(std::memory_order_relaxed);
  if (!warming || avg <= 0) {
    m.call_ns.store(avg <= 0 ? cost : avg + 0.25 * (cost - avg),
                    std::memory_order_relaxed);
  }
  if (!m.learner.wants()) {
    m.recheck_s.store(m.learner.next_check_s(), std::memory_order_relaxed);
    if (!m.decided.exchange(true, std::memory_order_relaxed)) {
      m.settle_calls.store(m.calls_to_decide.load(std::memory_order_relaxed),
                           std::memory_order_relaxed);
    }
    MaybeConfirm(m);
    FileDecision(m);
  }
  // Billed: the share of this call lost to a dearer mode, the bookkeeping
  // and the clock reads around the call (two; an async call's three more:
  // at Answered, around its release; the one before its Next is billed
  // there).
  Worker::Get().SpendRealCalls(m.learner.excess_share(timing.mode) * cost +
                               timing.sizing_ns + ThreadCpuNs() - end +
                               (timing.async ? 5 : 2) * Worker::ClockReadNs());
}

void MethodMeter::DropTrial(const CallTiming& timing) {
  impl_->learner.CancelTrial(timing.mode);
}

void MethodMeter::DiscardTimedCall(const CallTiming& timing) {
  impl_->failed_calls.fetch_add(1, std::memory_order_relaxed);
  Unobserved(timing);
}

void MethodMeter::LoseTimedCall(const CallTiming& timing) {
  impl_->lost_calls.fetch_add(1, std::memory_order_relaxed);
  Unobserved(timing);
}

void MethodMeter::Unobserved(const CallTiming& timing) {
  const double start = ThreadCpuNs();
  Impl& m = *impl_;
  m.learner.CancelTrial(timing.mode);
  if (timing.callback || timing.async) CountWindowTrial(timing, /*lost=*/true);
  // Billed as a timed call is: the excess of its mode, at what timed calls
  // cost lately (its own cost is not known here), and the clock reads.
  Worker::Get().SpendRealCalls(m.learner.excess_share(timing.mode) *
                                   m.call_ns.load(std::memory_order_relaxed) +
                               timing.sizing_ns + ThreadCpuNs() - start +
                               3 * Worker::ClockReadNs());
}

void MethodMeter::CountWindowTrial(const CallTiming& timing, bool lost) {
  Impl& m = *impl_;
  uint64_t window_lost = 0;
  {
    MutexLock lock(&m.window_mu);
    ++m.window_ended;
    if (lost) ++m.window_lost;
    if (m.window_ended < kLossWindow) return;
    window_lost = static_cast<uint64_t>(m.window_lost);
    m.window_ended = m.window_lost = 0;
  }
  if (window_lost <= static_cast<uint64_t>(kMaxLostInWindow)) return;
  if (m.callback_fallback.exchange(true, std::memory_order_relaxed)) return;
  // Its samples so far were real calls: the side thread's are paired, a
  // decision does not mix the two.
  m.learner.RestartDecision();
  std::fprintf(stderr,
               timing.async
                   ? "arenarpc: kAuto on %s: %llu of the last %d timed async "
                     "calls were not counted (Arrived() not right after "
                     "arenarpc::NextTag on its thread, Answered() missing or "
                     "on another thread, or the call failed); it learns on "
                     "the measuring thread from now on\n"
                   : "arenarpc: kAuto on %s: %llu of the last %d timed "
                     "callback calls ended on another thread (or around "
                     "another call); it learns on the measuring thread from "
                     "now on\n",
               m.name.c_str(), static_cast<unsigned long long>(window_lost),
               kLossWindow);
}

void BeforeAsyncNext() {
  AsyncThreadWindow& w = async_thread_window;
  ++w.seq;
  w.excluded_ns = 0;
  w.claimed = w.tainted = w.closed = false;
  if (async_trials_out.load(std::memory_order_relaxed) > 0) {
    w.start_ns = CpuNs(CLOCK_THREAD_CPUTIME_ID);
    // Billed here, whatever tag the Next returns.
    Worker::Get().SpendRealCalls(Worker::ClockReadNs());
  } else {
    w.start_ns = -1;
  }
}

void AsyncExclusionEnd(double start_ns) {
  if (start_ns < 0) return;
  AsyncThreadWindow& w = async_thread_window;
  // The two reads around it are the window's clock's too.
  w.excluded_ns +=
      CpuNs(CLOCK_THREAD_CPUTIME_ID) - start_ns + Worker::ClockReadNs();
  Worker::Get().SpendRealCalls(2 * Worker::ClockReadNs());
}

AsyncCall::AsyncCall(MethodMeter* meter, const MethodMeter::CallTiming& timing,
                     double made_at_ns)
    : meter_(meter), t_(timing) {
  if (t_.meter == nullptr) return;
  async_trials_out.fetch_add(1, std::memory_order_relaxed);
  cost_ns_ = made_at_ns - t_.start_ns;
}

void AsyncCall::Arrived() {
  AsyncThreadWindow& w = async_thread_window;
  const bool lines = w.seq != 0 && !w.claimed && !w.tainted && !w.closed;
  if (lines) w.claimed = true;
  if (meter_ != nullptr && lines) meter_->NoteAsyncLines();
  if (t_.meter == nullptr || state_ != State::kPosted || !lines ||
      w.start_ns < 0) {
    // Nothing of this Next to time: no exclusions from now on.
    if (lines) w.closed = true;
    if (t_.meter != nullptr && state_ == State::kPosted) state_ = State::kLost;
    return;
  }
  state_ = State::kArrived;
  seq_ = w.seq;
  thread_ = CallThread();
}

void AsyncCall::SizeRequest(const google::protobuf::Message& request) {
  const double start = MethodMeter::ThreadCpuNs();
  t_.request_bytes = static_cast<double>(request.ByteSizeLong());
  t_.bytes += t_.request_bytes;
  const double ns = MethodMeter::ThreadCpuNs() - start;
  t_.request_bytes_at_release = false;  // taken
  t_.sizing_ns += ns;
  AsyncThreadWindow& w = async_thread_window;
  if (w.open() && w.seq == seq_) w.excluded_ns += ns;
}

void AsyncCall::BeforeFreeRequest(const google::protobuf::Message& request) {
  if (state_ == State::kArrived && t_.request_bytes_at_release)
    SizeRequest(request);
}

void AsyncCall::Answered(const google::protobuf::Message* request,
                         const google::protobuf::Message& response, bool ok) {
  if (t_.meter == nullptr || state_ != State::kArrived) return;
  AsyncThreadWindow& w = async_thread_window;
  if (w.seq != seq_ || CallThread() != thread_ || !w.open()) {
    state_ = State::kLost;
    return;
  }
  const double end = MethodMeter::ThreadCpuNs();
  w.closed = true;
  if (!ok) {
    state_ = State::kFailed;
    return;
  }
  cost_ns_ += end - w.start_ns - w.excluded_ns;
  // Finish() serialized the response: its size is cached.
  t_.bytes += response.GetCachedSize();
  if (t_.request_bytes_at_release && request != nullptr) SizeRequest(*request);
  state_ = State::kAnswered;
}

double AsyncCall::BeforeRelease() const {
  if (t_.meter != nullptr && state_ == State::kAnswered) {
    return MethodMeter::ThreadCpuNs();
  }
  return AsyncExclusionStart();
}

void AsyncCall::AfterRelease(double start_ns) {
  AsyncThreadWindow& w = async_thread_window;
  if (t_.meter == nullptr) {
    // Another call's messages released before any Arrived() of this Next:
    // the Next's reading is not the next Arrived()'s.
    if (!w.claimed) w.tainted = true;
    AsyncExclusionEnd(start_ns);
    return;
  }
  async_trials_out.fetch_sub(1, std::memory_order_relaxed);
  MethodMeter* const meter = std::exchange(t_.meter, nullptr);
  MethodMeter::CallTiming t = t_;
  t.meter = meter;
  switch (state_) {
    case State::kAnswered: {
      const double released = MethodMeter::ThreadCpuNs() - start_ns;
      meter->EndAsyncCall(t, cost_ns_ + released);
      // Inside another call's window (its handler released these): not
      // that call's.
      if (!w.claimed) w.tainted = true;
      if (w.open()) {
        w.excluded_ns +=
            MethodMeter::ThreadCpuNs() - start_ns + Worker::ClockReadNs();
      }
      return;
    }
    case State::kPosted:  // the call never came (or Arrived() was not used)
      meter->DropTrial(t);
      break;
    case State::kArrived:  // no Answered(): not finished OK
    case State::kFailed:
      meter->DiscardTimedCall(t);
      break;
    case State::kLost:
      meter->LoseTimedCall(t);
      break;
  }
  if (!w.claimed) w.tainted = true;
  AsyncExclusionEnd(start_ns);
}

void MethodMeter::Submit(SampleBytes request,
                         const google::protobuf::Message& response,
                         double cpu_ns) {
  const double start = ThreadCpuNs();
  SubmitBytes(std::move(request), SampleBytes::Of(response));
  Worker::Get().AddSamplingCpu(impl_, cpu_ns + ThreadCpuNs() - start);
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

bool MethodMeter::SubmitBytes(SampleBytes request, SampleBytes response) {
  if (Worker::Get().TryPush(
          Sample{impl_, std::move(request), std::move(response)})) {
    impl_->submitted.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  impl_->dropped.fetch_add(1, std::memory_order_relaxed);
  return false;
}

uint64_t MeasuringProgress() { return Worker::Get().Progress(); }

void PauseMeasuringForTest(bool paused) { Worker::Get().Pause(paused); }
size_t QueuedSamplesForTest() { return Worker::Get().Queued(); }
double AutoLearningCpuNsForTest() { return Worker::Get().AutoBudgetSpentNs(); }
double ShadowMeasuringCpuNsForTest() { return Worker::Get().ShadowSpentNs(); }
double AutoLearningLastSampleNsForTest() {
  return Worker::Get().AutoLastSampleNs();
}

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
