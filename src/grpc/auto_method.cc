// kAuto per method: which calls are trials, their costs into the learner
// (src/internal/auto_learner.h) within the learning budget, request sizes,
// the async windows, memory given back, and the decisions files.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "arenarpc/grpc/auto_decisions.h"
#include "arenarpc/grpc/internal/auto_call.h"
#include "arenarpc/grpc/internal/counters.h"
#include "arenarpc/internal/cpu_clock.h"
#include "arenarpc/internal/mutex.h"
#include "arenarpc/malloc_tuning.h"
#include "src/grpc/decision_file.h"
#include "src/grpc/measured_stats.h"
#include "src/internal/auto_learner.h"
#include "src/internal/background.h"

namespace arenarpc::internal {

struct AutoMethod::State {
  const DecisionEntry id;  // the method's identity in decisions files
  void (*const trim_reuse)();
  AutoLearner learner;
  std::atomic<bool> async_lines{false};  // async.h's lines seen: timed
  std::atomic<uint64_t> lost{0};
  std::atomic<uint64_t> failed{0};
  std::atomic<bool> untimed{false};       // paused: trials mostly lost (logged)
  std::atomic<uint64_t> loaded_calls{0};  // the decisions file's entry's
  std::array<std::atomic<bool>, kNumAllocationModes> release_queued{};
  std::atomic<double> request_size{-1};  // agreed on (-1: walk every trial)
  std::array<std::atomic<uint32_t>, kNumAllocationModes> size_turn{};
  Mutex mu{};
  int window_ended ABSL_GUARDED_BY(mu) = 0;
  int window_lost ABSL_GUARDED_BY(mu) = 0;
  double size_anchor ABSL_GUARDED_BY(mu) = 0;  // the first of the run
  int size_run ABSL_GUARDED_BY(mu) = 0;        // walks in a row near it
};

namespace {

// Callback and async trials: a method pauses learning when more than half
// of a window of them is lost.
constexpr int kLossWindow = 32;
// A heap or arena trial this large leaves megabytes idle in its thread's
// heap or page cache (docs/DESIGN_NOTES.md, "Memory while learning").
constexpr double kReleaseAfterBytes = 256 << 10;
constexpr std::chrono::milliseconds kReleaseDelay{200};
// A callback or async trial walks its request for its size (ByteSizeLong:
// 144-204 us on 520-650 KB, billed). Once kSizesAgree walks in a row came
// within 1/64 of the first, only every kSizeEvery-th trial of each mode
// walks, to check, the others take that size; a check outside starts over.
// Per mode: modes take turns, and a walk warms the cache for the release.
constexpr int kSizesAgree = 8;
constexpr uint32_t kSizeEvery = 8;

double NowS() { return CpuClockNs(CLOCK_MONOTONIC) / 1e9; }  // steady

std::array<double, kNumAllocationModes> Micros(
    std::array<double, kNumAllocationModes> ns) {
  for (double& x : ns) x /= 1e3;
  return ns;
}

// What one read of the thread's CPU clock costs (measured once): billed.
double ClockReadNs() {
  static const double ns = [] {
    double best = 1e9;
    for (int i = 0; i < 16; ++i) {
      const double a = ThreadCpuNs();
      best = std::min(best, ThreadCpuNs() - a);
    }
    return best;
  }();
  return ns;
}

constinit LearningBudget budget;

// The process's CPU, read at most every 10 ms (a system call): the budget
// only needs it roughly.
bool BudgetHasRoom(double now_s) {
  static std::atomic<double> cpu_ns{0};
  static std::atomic<double> read_at_s{-1};
  if (now_s - read_at_s.load(std::memory_order_relaxed) > 0.01) {
    read_at_s.store(now_s, std::memory_order_relaxed);
    cpu_ns.store(ProcessCpuNs(), std::memory_order_relaxed);
  }
  return budget.HasRoom(cpu_ns.load(std::memory_order_relaxed));
}

// Async trials handed out and not ended: NextTag reads the clock only then.
std::atomic<int64_t> async_trials_out{0};

// The process's kAuto methods and decisions files.
struct Registry {
  Mutex mu;
  std::vector<AutoMethod*> methods ABSL_GUARDED_BY(mu);
  // Each file read (at install, or loaded): its entries of methods not
  // installed here are saved again.
  std::map<std::string, std::vector<DecisionEntry>> files ABSL_GUARDED_BY(mu);
  std::string save_path ABSL_GUARDED_BY(mu);     // the first install's
  bool save_posted ABSL_GUARDED_BY(mu) = false;  // a save waits to run
  double saved_at_s ABSL_GUARDED_BY(mu) = -1;
};
Registry& TheRegistry() {
  static Registry* const r = new Registry();  // outlives every call
  return *r;
}

// Every AutoMethod made so far, with `add` (a new one) if given.
std::vector<AutoMethod*> Methods(AutoMethod* add = nullptr) {
  Registry& r = TheRegistry();
  MutexLock lock(&r.mu);
  if (add != nullptr) r.methods.push_back(add);
  return r.methods;
}

// Gives back what `mode` keeps idle (calls keep what they use) on the
// background thread, kReleaseDelay later so that the calls still ending in
// `mode` join this one release, unless calls run in it again by then.
void ReleaseIdle(AutoMethod::State& m, AllocationMode mode) {
  const int i = static_cast<int>(mode);
  if (m.release_queued[i].exchange(true, std::memory_order_relaxed)) return;
  const bool posted = PostBackground(
      [&m, mode, i] {
        m.release_queued[i].store(false, std::memory_order_relaxed);
        if (m.learner.current() == mode) return;
        if (mode == AllocationMode::kHeap) {
          TrimHeap();
          return;
        }
        if (mode == AllocationMode::kReuse && m.trim_reuse != nullptr) {
          m.trim_reuse();
        }
        ReleaseIdleArenasAndPages(std::chrono::milliseconds(0));
      },
      kReleaseDelay);
  if (!posted) m.release_queued[i].store(false, std::memory_order_relaxed);
}

// A trial in `mode` of `bytes` ended: what it left idle goes back if calls
// do not run in that mode; while learning, not for reuse (its kept instance
// makes reuse cheap) nor small trials (fresh pages weigh on their next).
void AfterTrial(AutoMethod::State& m, AllocationMode mode, double bytes) {
  const bool keep = m.learner.learning() && (mode == AllocationMode::kReuse ||
                                             bytes < kReleaseAfterBytes);
  if (mode != m.learner.current() && !keep) ReleaseIdle(m, mode);
}

// A callback or async trial ended, lost or not: its request's size, if
// walked, is noted. Most of a window lost: the method's calls cannot be
// timed now (e.g. a loaded machine moving them between threads), maybe
// later: learning is paused, not stopped, so a bad window never leaves the
// method in the mode of its first trials (logged once).
void CountWindow(AutoMethod::State& m, const CallTiming& t, bool lost) {
  int window_lost = 0;
  {
    MutexLock lock(&m.mu);
    if (const double b = t.sized_bytes; b >= 0) {
      const bool agrees =
          m.size_run > 0 && std::abs(b - m.size_anchor) <= m.size_anchor / 64;
      if (!agrees) m.size_anchor = b;
      m.size_run = agrees ? m.size_run + 1 : 1;
      m.request_size.store(m.size_run >= kSizesAgree ? m.size_anchor : -1,
                           std::memory_order_relaxed);
    }
    ++m.window_ended;
    if (lost) ++m.window_lost;
    if (m.window_ended < kLossWindow) return;
    window_lost = m.window_lost;
    m.window_ended = m.window_lost = 0;
  }
  if (window_lost <= kLossWindow / 2) return;
  m.learner.Pause(NowS());
  if (m.untimed.exchange(true, std::memory_order_relaxed)) return;
  std::fprintf(stderr,
               "arenarpc: kAuto on %s: %d of the last %d timed calls ended on "
               "another thread, around another call, or (async) without "
               "arenarpc::NextTag's window; learning paused until its next "
               "re-check, in %s meanwhile (logged once)\n",
               m.id.method.c_str(), window_lost, kLossWindow,
               std::string(AllocationModeName(m.learner.current())).c_str());
}

// Starts `m` settled in a decisions file's entry (its mode, costs and
// calls), or says why the entry does not apply.
std::string StartSettled(AutoMethod::State& m, const DecisionEntry& e) {
  if (std::string why = Mismatch(e, m.id); !why.empty()) return why;
  if (m.learner.snapshot().source != DecisionSource::kNone) {
    return "decided already";
  }
  std::array<double, kNumAllocationModes> cost_ns;
  for (int i = 0; i < kNumAllocationModes; ++i) cost_ns[i] = e.cost_us[i] * 1e3;
  m.loaded_calls.store(e.calls, std::memory_order_relaxed);
  m.learner.Load(e.mode, NowS(), cost_ns);
  return "";
}

// At install with a decisions file, read once per process and path: its
// entry for `m`. A file or entry that does not apply: a line on stderr.
void StartAtInstall(AutoMethod::State& m, const AutoOptions& o) {
  Registry& r = TheRegistry();
  MutexLock lock(&r.mu);
  if (o.save_decisions && r.save_path.empty()) r.save_path = o.decisions_path;
  auto [file, fresh] = r.files.try_emplace(o.decisions_path);
  if (fresh) {
    auto read = ReadDecisions(o.decisions_path);
    if (!read.ok()) {
      std::fprintf(stderr,
                   "arenarpc: auto decisions file %s ignored (kAuto learns as "
                   "without it): %s\n",
                   o.decisions_path.c_str(), read.status().ToString().c_str());
    }
    file->second = std::move(read).value_or(std::vector<DecisionEntry>());
  }
  const auto e =
      std::ranges::find(file->second, m.id.method, &DecisionEntry::method);
  if (e == file->second.end()) return;
  if (const std::string why = StartSettled(m, *e); !why.empty()) {
    std::fprintf(stderr,
                 "arenarpc: auto decisions file %s: %s ignored (kAuto learns "
                 "it): %s\n",
                 o.decisions_path.c_str(), e->method.c_str(), why.c_str());
  }
}

// The background thread's save: every decision settled by now.
void SaveDecisions() {
  Registry& r = TheRegistry();
  std::string path;
  {
    MutexLock lock(&r.mu);
    r.save_posted = false;
    r.saved_at_s = NowS();
    path = r.save_path;
  }
  if (const absl::Status st = SaveAutoDecisions(path); !st.ok()) {
    std::fprintf(stderr, "arenarpc: saving auto decisions to %s: %s\n",
                 path.c_str(), st.ToString().c_str());
  }
}

// A decision settled: saved to the first install's path, if any, at most
// once a second (one save takes every decision settled before it runs).
void DecisionSettled() {
  Registry& r = TheRegistry();
  MutexLock lock(&r.mu);
  if (r.save_path.empty() || r.save_posted) return;
  const double wait_s = std::max(0.0, r.saved_at_s + 1 - NowS());
  r.save_posted = PostBackground(
      &SaveDecisions, std::chrono::milliseconds(std::lround(wait_s * 1e3)),
      /*bounded=*/false);  // one at a time; a full queue must not lose it
}

}  // namespace

AutoMethod::AutoMethod(std::string name, const AutoOptions& options,
                       const google::protobuf::Descriptor* request,
                       const google::protobuf::Descriptor* response,
                       void (*trim_reuse)())
    : state_(new State{
          .id = IdentityOf(name, request, response),
          .trim_reuse = trim_reuse,
          .learner = AutoLearner(LearnerOptions{
              .recheck_after_s = options.recheck_after_s,
              .prior_min_bytes = options.prior.min_bytes,
              .prior_heap_ns_per_byte = options.prior.heap_ns_per_byte})}) {
  budget.set_share(std::clamp(options.max_cpu_share, 0.0, 1.0));
  Methods(this);
  if (!options.decisions_path.empty()) StartAtInstall(*state_, options);
}

AllocationMode AutoMethod::mode() const { return state_->learner.current(); }

AllocationMode AutoMethod::ModeForCall(CallKind kind, double request_bytes,
                                       CallTiming* timing) {
  State& m = *state_;
  const bool async = kind == CallKind::kAsync;
  if (async && !m.async_lines.load(std::memory_order_relaxed)) {
    return m.learner.current();
  }
  const double now = NowS();
  const std::optional<AllocationMode> trial = m.learner.Trial(now);
  if (!trial || !BudgetHasRoom(now)) return m.learner.current();
  *timing = CallTiming{.method = this, .mode = *trial, .kind = kind};
  const double known = m.request_size.load(std::memory_order_relaxed);
  std::atomic<uint32_t>& turn = m.size_turn[static_cast<int>(*trial)];
  if (kind == CallKind::kSync) {
    timing->bytes = std::max(request_bytes, 0.0);
  } else if (known < 0 ||
             turn.fetch_add(1, std::memory_order_relaxed) % kSizeEvery == 0) {
    timing->size_request = true;
  } else {
    timing->bytes = known;  // kSizesAgree
  }
  if (async) async_trials_out.fetch_add(1, std::memory_order_relaxed);
  timing->start_ns = ThreadCpuNs();
  return *trial;
}

void AutoMethod::Observe(const CallTiming& t, double cost_ns) {
  const double start = ThreadCpuNs();
  State& m = *state_;
  if (t.kind != CallKind::kSync) CountWindow(m, t, /*lost=*/false);
  // Billed: the share of this call lost to a dearer mode, the sizing, the
  // clock reads (an async call's three more).
  const double excess = m.learner.ExcessShare(t.mode) * cost_ns;
  if (m.learner.Observe(t.mode, cost_ns, t.bytes, t.warming, NowS())) {
    // Only what calls ran in: a trim of a mode nobody used (heap held out
    // by the prior) costs the background thread and refaults free memory.
    for (int i = 0; i < kNumAllocationModes; ++i) {
      const auto mode = static_cast<AllocationMode>(i);
      if (mode != m.learner.current() && m.learner.Ran(mode)) {
        ReleaseIdle(m, mode);
      }
    }
    DecisionSettled();
  } else {
    AfterTrial(m, t.mode, t.bytes);
  }
  const int reads = t.kind == CallKind::kAsync ? 5 : 2;
  budget.Spend(excess + t.sizing_ns + ThreadCpuNs() - start +
               reads * ClockReadNs());
}

void AutoMethod::Unobserved(const CallTiming& t, bool lost) {
  const double start = ThreadCpuNs();
  State& m = *state_;
  (lost ? m.lost : m.failed).fetch_add(1, std::memory_order_relaxed);
  if (t.kind != CallKind::kSync) CountWindow(m, t, lost);
  AfterTrial(m, t.mode, t.bytes);
  budget.Spend(t.sizing_ns + ThreadCpuNs() - start + 3 * ClockReadNs());
}

void BeforeAsyncNext() {
  AsyncThreadWindow& w = async_thread_window;
  w = {.seq = w.seq + 1};  // the rest as before any Next
  if (async_trials_out.load(std::memory_order_relaxed) > 0) {
    w.start_ns = ThreadCpuNs();
    budget.Spend(ClockReadNs());  // whatever tag the Next returns
  }
}

void AsyncExclusionEnd(double start_ns) {
  if (start_ns < 0) return;
  // The two reads around it are the window's clock's too.
  async_thread_window.excluded_ns += ThreadCpuNs() - start_ns + ClockReadNs();
  budget.Spend(2 * ClockReadNs());
}

void AsyncCall::Arrived() {
  AsyncThreadWindow& w = async_thread_window;
  const bool lines = w.seq != 0 && !w.claimed && !w.tainted && !w.closed;
  if (lines) w.claimed = true;
  if (method_ != nullptr && lines) {
    method_->state().async_lines.store(true, std::memory_order_relaxed);
  }
  if (t_.method == nullptr || state_ != State::kPosted || !lines ||
      w.start_ns < 0) {
    if (lines) w.closed = true;  // nothing of this Next to time
    if (t_.method != nullptr && state_ == State::kPosted) state_ = State::kLost;
    return;
  }
  state_ = State::kArrived;
  seq_ = w.seq;
  thread_ = CallThread();
}

void AsyncCall::SizeRequest(const google::protobuf::Message* request) {
  AsyncThreadWindow& w = async_thread_window;
  t_.SizeRequest(request, w.open() && w.seq == seq_ ? &w.excluded_ns : nullptr);
}

void AsyncCall::Answered(const google::protobuf::Message* request,
                         const google::protobuf::Message& response, bool ok) {
  if (t_.method == nullptr || state_ != State::kArrived) return;
  AsyncThreadWindow& w = async_thread_window;
  if (w.seq != seq_ || CallThread() != thread_ || !w.open()) {
    state_ = State::kLost;
    return;
  }
  const double end = ThreadCpuNs();
  w.closed = true;
  state_ = ok ? State::kAnswered : State::kFailed;
  if (!ok) return;
  cost_ns_ += end - w.start_ns - w.excluded_ns;
  t_.bytes += response.GetCachedSize();  // Finish() serialized it
  SizeRequest(request);
}

void AsyncCall::AfterRelease(double start_ns) {
  AsyncThreadWindow& w = async_thread_window;
  // Released before an Arrived() claimed this Next: its reading is no call's.
  if (!w.claimed) w.tainted = true;
  if (t_.method == nullptr) {
    AsyncExclusionEnd(start_ns);
    return;
  }
  async_trials_out.fetch_sub(1, std::memory_order_relaxed);
  const CallTiming t = std::exchange(t_, {});
  if (state_ == State::kAnswered) {
    t.method->Observe(t, cost_ns_ + ThreadCpuNs() - start_ns);
    if (w.open()) w.excluded_ns += ThreadCpuNs() - start_ns + ClockReadNs();
    return;
  }
  // Posted (never came, or no Arrived()), no Answered(), failed: not OK.
  t.method->Unobserved(t, /*lost=*/state_ == State::kLost);
  AsyncExclusionEnd(start_ns);
}

std::vector<MeasuredMethodStats> AutoMethodsStats() {
  std::vector<MeasuredMethodStats> out;
  for (AutoMethod* a : Methods()) {
    const AutoMethod::State& m = a->state();
    const AutoLearner::Snapshot s = m.learner.snapshot();
    out.push_back({.method = m.id.method,
                   .automatic = true,
                   .mode = s.mode,
                   .recommended = s.mode,
                   .cost_us = Micros(s.cost_ns),
                   .switches = s.switches,
                   .settled = !s.learning,
                   .decisions = s.decisions,
                   .settle_calls = s.first_decision_calls,
                   .settle_s = std::max(s.first_decision_s, 0.0),
                   .decision_source = s.source,
                   .prior_decisions = s.prior_decisions,
                   .timed_calls = s.observed,
                   .warming_calls = s.warming,
                   .lost_calls = m.lost.load(std::memory_order_relaxed),
                   .failed_calls = m.failed.load(std::memory_order_relaxed),
                   .untimed = m.untimed.load(std::memory_order_relaxed)});
  }
  return out;
}

double AutoLearningCpuNs() { return budget.spent_ns(); }

}  // namespace arenarpc::internal

namespace arenarpc {

absl::Status SaveAutoDecisions(const std::string& path) {
  const double now = std::chrono::duration<double>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  std::vector<internal::DecisionEntry> out;
  std::set<std::string> installed;
  for (internal::AutoMethod* a : internal::Methods()) {
    const internal::AutoMethod::State& m = a->state();
    const internal::AutoLearner::Snapshot s = m.learner.snapshot();
    installed.insert(m.id.method);
    if (s.source == DecisionSource::kNone) continue;
    internal::DecisionEntry& e = out.emplace_back(m.id);
    // A loaded decision is saved as it was loaded (costs, calls), as learned.
    const bool loaded = s.source == DecisionSource::kLoaded;
    e.mode = s.mode;
    e.source = loaded ? DecisionSource::kLearned : s.source;
    e.cost_us = internal::Micros(s.cost_ns);
    e.calls =
        loaded ? m.loaded_calls.load(std::memory_order_relaxed) : s.observed;
    e.saved_unix_s = now;
  }
  {
    internal::Registry& r = internal::TheRegistry();
    internal::MutexLock lock(&r.mu);
    if (const auto file = r.files.find(path); file != r.files.end()) {
      for (const internal::DecisionEntry& e : file->second) {
        if (!installed.contains(e.method)) out.push_back(e);
      }
    }
  }
  return internal::WriteDecisions(path, out);  // not under the lock: fsync
}

absl::StatusOr<int> LoadAutoDecisions(const std::string& path) {
  auto entries = internal::ReadDecisions(path);
  if (!entries.ok()) return entries.status();
  const std::vector<internal::AutoMethod*> methods = internal::Methods();
  int started = 0;
  for (const internal::DecisionEntry& e : *entries) {
    const auto it = std::ranges::find_if(methods, [&](internal::AutoMethod* a) {
      return a->state().id.method == e.method;
    });
    const std::string why = it == methods.end()
                                ? "not a kAuto method of this process"
                                : internal::StartSettled((*it)->state(), e);
    if (why.empty()) {
      ++started;
    } else {
      std::fprintf(stderr, "arenarpc: auto decisions file %s: %s ignored: %s\n",
                   path.c_str(), e.method.c_str(), why.c_str());
    }
  }
  internal::Registry& r = internal::TheRegistry();
  internal::MutexLock lock(&r.mu);
  r.files[path] = *std::move(entries);  // kept for the next save
  return started;
}

}  // namespace arenarpc
