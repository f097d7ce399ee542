// Internal: a method's measuring, for kAuto and for shadow measurement
// (arenarpc/grpc/shadow.h): sampling, the queue to the one measuring
// thread, the chooser the measurements feed, the capture. Defined in
// src/grpc/method_meter.cc. Not a public API; the allocators' templates
// (arenarpc/grpc/allocators.h) need it.
//
// Thread safety: a MethodMeter is used by every call of its method at once;
// a SampledCall by one call at a time, as gRPC guarantees for its holder.
// Lifetime: a MethodMeter is never destroyed (the measuring thread may
// still hold its samples).
#ifndef ARENARPC_GRPC_INTERNAL_METHOD_METER_H_
#define ARENARPC_GRPC_INTERNAL_METHOD_METER_H_

#include <google/protobuf/message.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "arenarpc/allocation_mode.h"
#include "arenarpc/grpc/server_options.h"

namespace arenarpc::internal {

// The serialized bytes of a sampled message. From kMappedBytes on they get
// an anonymous mapping of their own, unmapped when freed: the measuring
// thread frees a sample after the call that took it ended, and a heap copy
// of megabytes would go back into the call thread's glibc arena, at its top,
// which malloc_trim(0) does not trim in thread arenas (only glibc's own
// M_TRIM_THRESHOLD does, and glibc raises that up to 64 MiB once blocks
// that large were freed). Measured: docs/DESIGN_NOTES.md, "Memory after a
// burst".
//
// Thread safety: one thread at a time. Lifetime: owns its bytes.
class SampleBytes {
 public:
  // glibc's default M_MMAP_THRESHOLD: what it maps on its own, unraised.
  static constexpr size_t kMappedBytes = size_t{128} << 10;

  SampleBytes() = default;
  explicit SampleBytes(std::string bytes) : heap_(std::move(bytes)) {}
  // `message` serialized (mapped from kMappedBytes on; on the heap if the
  // mapping fails).
  static SampleBytes Of(const google::protobuf::Message& message);
  SampleBytes(SampleBytes&& o) noexcept { *this = std::move(o); }
  SampleBytes& operator=(SampleBytes&& o) noexcept;
  SampleBytes(const SampleBytes&) = delete;
  SampleBytes& operator=(const SampleBytes&) = delete;
  ~SampleBytes() { Unmap(); }

  std::string_view view() const {
    return mapped_ != nullptr ? std::string_view(mapped_, size_) : heap_;
  }
  size_t size() const { return view().size(); }
  bool mapped() const { return mapped_ != nullptr; }

 private:
  void Unmap();

  std::string heap_;
  char* mapped_ = nullptr;
  size_t size_ = 0;         // of the bytes in mapped_
  size_t mapped_size_ = 0;  // of the mapping (whole pages)
};

// One method's measuring (see the top of this file).
class MethodMeter {
 public:
  // `mode`: kAuto (the chooser's pick runs) or the installed mode.
  // `trim_reuse`: gives back the idle instances of the method's kReuse
  // pools, once kAuto stops running calls in reuse (src/grpc/auto_memory.h;
  // nullptr: nothing to give back).
  MethodMeter(std::string name, AllocationMode mode,
              const ShadowOptions& shadow,
              const google::protobuf::Message* request_prototype,
              const google::protobuf::Message* response_prototype,
              const AutoOptions& automatic = {},
              void (*trim_reuse)() = nullptr);
  // The mode calls run in now.
  AllocationMode mode() const;
  // The mode of one call. kAuto with kRealCalls, `request_bytes` as
  // next_call_request_bytes (arenarpc/grpc/internal/counters.h): a sync
  // call (bytes known) or a callback or async call (the request sized at
  // release, or the method's known size: src/grpc/request_sizes.h): while
  // it learns and the budget has room, a mode to try, and `timing` set (the
  // clock started); otherwise mode().
  struct CallTiming {
    MethodMeter* meter = nullptr;  // null: not timed
    AllocationMode mode = AllocationMode::kArena;
    double start_ns = 0;
    double bytes = 0;       // on the wire: request (given, known, or sized
                            // later), and the response's, added at release
    bool callback = false;  // a callback call
    bool async = false;     // an async call (AsyncCall times it)
    bool request_bytes_at_release = false;  // its request not sized yet
    double request_bytes = -1;  // as walked by SizeRequest (else -1)
    // The thread the clock runs on, and its holder events then (TimedCall).
    uint64_t thread = 0;
    uint64_t events = 0;
    // Sizing the request at release: on the clock's thread (not the call's
    // cost), and in all (billed).
    double excluded_ns = 0;
    double sizing_ns = 0;
    // kReuse: a message of the call was a new instance (its pool warming):
    // timed and billed, not observed (EndCall).
    bool new_instance = false;
  };
  AllocationMode ModeForCall(double request_bytes, CallTiming* timing);
  // True if this method learns on real calls for calls like this one (then
  // ShouldSample's kAuto part must not also sample it): kRealCalls, a sync
  // or callback call, and for a callback call only while its timed calls
  // mostly end where they began (see LoseTimedCall); for an async call
  // (kCallAsync) only once its calls were seen with the user's lines
  // (NoteAsyncLines) and while their windows are mostly kept.
  bool LearnsOnCall(double request_bytes) const;
  // An async call arrived in a window of arenarpc::NextTag on its thread:
  // the method's async calls may be timed from now on (the side thread's
  // samples of a decision under way are discarded, as a decision does not
  // mix the two). Cheap once seen.
  void NoteAsyncLines();
  // An async call's trial, timed by AsyncCall: `cost_ns` of CPU on its
  // window (the parse, handler and Finish's serialization) plus its
  // messages' making and release; into the learner and the budget as
  // EndTimedCall's.
  void EndAsyncCall(const CallTiming& timing, double cost_ns);
  // A trial whose call never came (an async CallData released at shutdown):
  // handed out again, not counted.
  void DropTrial(const CallTiming& timing);
  // A timed call that did not end OK (a non-OK status, or cancelled): not
  // observed (its cost says nothing about the mode), handed out again,
  // billed as a lost one, counted (failed_calls); an async one counts in
  // its loss window as a lost one does.
  void DiscardTimedCall(const CallTiming& timing);
  // The timed call's end on the thread it began on, with no other call's
  // holder made or released there in between: its cost, into the learner
  // and the budget.
  void EndTimedCall(const CallTiming& timing);
  // A timed call that ended on another thread, or around another call's
  // holder: not observed (the trial is handed out again), billed as if it
  // cost what timed calls cost lately, counted (lost_calls). If more than
  // half the callback trials of a window of 32 are lost, the method learns
  // on the side thread from then on (counted, logged once).
  void LoseTimedCall(const CallTiming& timing);
  // True for the calls whose messages are measured: under kAuto, while it
  // learns, the next call once its budget has room (one at a time; not
  // when `auto_side` is false); and a random 1 in sample_one_in when shadow
  // measurement is on. False while the queue is full.
  bool ShouldSample(bool auto_side = true);
  // Serializes the response of a sampled call (on the calling thread) and
  // queues it with the request's bytes. Never waits: drops the sample when
  // the queue is full or busy.
  // `cpu_ns` is the calling thread's CPU spent on the sample so far
  // (serializing the request); Submit adds its own and records the sum.
  void Submit(SampleBytes request, const google::protobuf::Message& response,
              double cpu_ns);
  // The calling thread's CPU time, ns (what sampling costs is counted).
  static double ThreadCpuNs();
  // Queues serialized messages as a sample; false if dropped. Bytes that do
  // not parse are counted as malformed by the measuring thread.
  bool SubmitBytes(SampleBytes request, SampleBytes response);
  bool SubmitBytes(std::string request, std::string response) {
    return SubmitBytes(SampleBytes(std::move(request)),
                       SampleBytes(std::move(response)));
  }

  struct Impl;

 private:
  // A callback or async trial ended (timed or not): its loss window.
  void CountWindowTrial(const CallTiming& timing, bool lost);
  // A timed call not observed (lost or failed): its trial handed out
  // again, its loss window, the bill.
  void Unobserved(const CallTiming& timing);
  // A timed call's cost, `end` the thread's CPU clock when it ended.
  void EndCall(const CallTiming& timing, double cost_ns, double end_ns);

  Impl* const impl_;  // never destroyed
};

// The calling thread's identity (never 0, never reused) and its count of
// holder events (a holder made or released on it): a timed call's clock is
// the thread's CPU, which means the call's own only if it ends on the
// thread it began on with no other holder event in between.
struct ThreadCallEvents {
  uint64_t thread = 0;  // 0: not assigned yet
  uint64_t events = 0;
};
inline constinit thread_local ThreadCallEvents thread_call_events;
uint64_t AssignCallThread();  // a fresh identity (src/grpc/method_meter.cc)
inline uint64_t CallThread() {
  uint64_t& t = thread_call_events.thread;
  if (t == 0) [[unlikely]]
    t = AssignCallThread();
  return t;
}

// A holder's first member (destroyed last, after the call's messages were
// freed): counts the thread's holder events, and ends a timed call's clock
// (kRealCalls) or loses it (LoseTimedCall).
class TimedCall {
 public:
  explicit TimedCall(const MethodMeter::CallTiming& timing) : t_(timing) {
    const uint64_t events = ++thread_call_events.events;
    if (t_.meter != nullptr) {
      t_.thread = CallThread();
      t_.events = events;
    }
  }
  TimedCall(const TimedCall&) = delete;
  TimedCall& operator=(const TimedCall&) = delete;
  bool timed() const { return t_.meter != nullptr; }
  // The call did not end OK: not observed (DiscardTimedCall).
  void Fail() { failed_ = true; }
  ~TimedCall() {
    if (t_.meter != nullptr) {
      if (failed_) {
        t_.meter->DiscardTimedCall(t_);
      } else if (InWindow()) {
        t_.meter->EndTimedCall(t_);
      } else {
        t_.meter->LoseTimedCall(t_);
      }
    }
    ++thread_call_events.events;
  }
  // A callback call's request freed early (FreeRequest): its bytes now.
  void BeforeFreeRequest(const google::protobuf::Message& request) {
    if (t_.meter != nullptr && t_.request_bytes_at_release)
      SizeRequest(request);
  }
  // At Release: the response's bytes, cached by its serialization, and a
  // callback call's request's unless its size was known (walked: its cost
  // is not the call's, and is billed). Nothing when the call is lost anyway.
  void AtRelease(const google::protobuf::Message* request,
                 const google::protobuf::Message& response) {
    if (t_.meter == nullptr || !InWindow()) return;
    t_.bytes += response.GetCachedSize();
    if (t_.request_bytes_at_release && request != nullptr)
      SizeRequest(*request);
  }

 private:
  bool InWindow() const {
    return thread_call_events.thread == t_.thread &&
           thread_call_events.events == t_.events;
  }
  void SizeRequest(const google::protobuf::Message& request) {
    const double start = MethodMeter::ThreadCpuNs();
    t_.request_bytes = static_cast<double>(request.ByteSizeLong());
    t_.bytes += t_.request_bytes;
    const double ns = MethodMeter::ThreadCpuNs() - start;
    t_.request_bytes_at_release = false;  // taken
    t_.sizing_ns += ns;
    if (thread_call_events.thread == t_.thread) t_.excluded_ns += ns;
  }

  MethodMeter::CallTiming t_;
  bool failed_ = false;
};

// A holder's part in measuring a sampled call (none when `meter` is null):
// the request's bytes are taken when gRPC releases the call, or, if the
// handler frees the request early, just before it is freed (only then on
// the handler's thread, for sampled calls).
class SampledCall {
 public:
  explicit SampledCall(MethodMeter* meter) : meter_(meter) {}
  void BeforeFreeRequest(const google::protobuf::Message& request) {
    if (meter_ == nullptr) return;
    const double start = MethodMeter::ThreadCpuNs();
    freed_request_ = SampleBytes::Of(request);
    cpu_ns_ = MethodMeter::ThreadCpuNs() - start;
  }
  void AtRelease(const google::protobuf::Message* request,
                 const google::protobuf::Message& response) {
    if (meter_ == nullptr) return;
    const double start = MethodMeter::ThreadCpuNs();
    if (request != nullptr) {
      SampleBytes bytes = SampleBytes::Of(*request);
      meter_->Submit(std::move(bytes), response,
                     MethodMeter::ThreadCpuNs() - start);
    } else if (freed_request_.has_value()) {
      meter_->Submit(std::move(*freed_request_), response, cpu_ns_);
    }
  }

 private:
  MethodMeter* const meter_;
  std::optional<SampleBytes> freed_request_;
  double cpu_ns_ = 0;
};

// An async call's window (kAuto, kRealCalls; arenarpc/grpc/async.h). gRPC
// parses an async request inside the CompletionQueue::Next() that returns
// its tag (the tag's FinalizeResult), and Finish() serializes the response
// on the calling thread, so a call's CPU is the thread's from just before
// that Next() to just after Finish(): arenarpc::NextTag reads the thread's
// CPU clock before Next() (only while some async trial is out), Arrived()
// takes that reading for the call, Answered() closes the window. The call
// is counted only if that Next() was the last one on the thread and no
// other call's messages were released there between it and Arrived() (else
// the reading is another event's: lost), and if Answered() runs on the same
// thread with no Next() in between. Other calls' messages made or released
// on the thread while a window is open are timed and taken out of it.
struct AsyncThreadWindow {
  uint64_t seq = 0;        // NextTag calls on this thread (0: none yet)
  double start_ns = -1;    // the thread's CPU before the last Next (-1: unread)
  double excluded_ns = 0;  // other calls' making and releasing since then
  bool claimed = false;    // an Arrived() took this Next
  bool tainted = false;    // another call's messages released before that
  bool closed = false;     // Answered() (or an untimed Arrived()) closed it
  bool open() const { return start_ns >= 0 && !closed; }
};
inline constinit thread_local AsyncThreadWindow async_thread_window;

// NextTag's part before Next().
void BeforeAsyncNext();

// Timing other calls' messages made or released while a window is open on
// this thread (start: -1 when none is; End adds the time to the window).
inline double AsyncExclusionStart() {
  return async_thread_window.open() ? MethodMeter::ThreadCpuNs() : -1;
}
void AsyncExclusionEnd(double start_ns);

// One async call's part in kAuto's real-call learning (or none: no trial).
class AsyncCall {
 public:
  AsyncCall() = default;
  // `meter`: the method's (null: a fixed mode, nothing measured); `timing`:
  // its trial (timing.meter null: none), its clock started at the making
  // of the messages, which `made_at_ns` ended (their making is the call's).
  AsyncCall(MethodMeter* meter, const MethodMeter::CallTiming& timing,
            double made_at_ns);
  AsyncCall(AsyncCall&& o) noexcept { *this = std::move(o); }
  AsyncCall& operator=(AsyncCall&& o) noexcept {
    meter_ = std::exchange(o.meter_, nullptr);
    t_ = std::exchange(o.t_, {});
    state_ = std::exchange(o.state_, State::kPosted);
    seq_ = o.seq_;
    thread_ = o.thread_;
    cost_ns_ = o.cost_ns_;
    return *this;
  }
  AsyncCall(const AsyncCall&) = delete;
  AsyncCall& operator=(const AsyncCall&) = delete;

  void Arrived();
  void Answered(const google::protobuf::Message* request,
                const google::protobuf::Message& response, bool ok);
  void BeforeFreeRequest(const google::protobuf::Message& request);
  // Around the messages' release: its time is the call's (timed and
  // answered), or another open window's to leave out.
  double BeforeRelease() const;
  void AfterRelease(double start_ns);

 private:
  enum class State : uint8_t { kPosted, kArrived, kAnswered, kLost, kFailed };
  void SizeRequest(const google::protobuf::Message& request);

  MethodMeter* meter_ = nullptr;
  MethodMeter::CallTiming t_;  // t_.meter null: not a trial
  State state_ = State::kPosted;
  uint64_t seq_ = 0;     // the thread's NextTag count at Arrived()
  uint64_t thread_ = 0;  // the thread of Arrived()
  double cost_ns_ = 0;   // making, then the window, then the release
};

// Samples queued plus samples the measuring thread has finished (their
// bytes and parsed copies freed), since the process started. Idle trimming
// takes a change as activity: the measuring thread runs behind a queue at
// low priority, so it frees pages and heap after the calls it measures
// ended, and a server is idle only once it is done too.
uint64_t MeasuringProgress();

// Tests only: while paused the measuring thread takes nothing off the queue;
// the number of samples queued now.
void PauseMeasuringForTest(bool paused);
size_t QueuedSamplesForTest();
// Tests only: what kAuto's learning has spent (ns), and its last sample.
double AutoLearningCpuNsForTest();
double AutoLearningLastSampleNsForTest();
// Tests only: what shadow measurement has spent (ns): the measuring
// thread's CPU and the call threads' sampling.
double ShadowMeasuringCpuNsForTest();

}  // namespace arenarpc::internal

#endif  // ARENARPC_GRPC_INTERNAL_METHOD_METER_H_
