// Internal: kAuto on the call path (src/grpc/auto_method.cc). A method's
// AutoMethod hands some calls a trial, a mode to run in; the call's holder
// times it on the thread that runs it: sync and callback calls from
// AllocateMessages to Release (TimedCall), async calls inside the window of
// arenarpc/grpc/async.h's three lines (AsyncCall). docs/DESIGN.md, "auto:
// the learner".
//
// Thread safety: an AutoMethod is used by every call of its method at once;
// a TimedCall or AsyncCall by one call at a time, as gRPC guarantees.
// Lifetime: an AutoMethod is never destroyed.
#ifndef ARENARPC_GRPC_INTERNAL_AUTO_CALL_H_
#define ARENARPC_GRPC_INTERNAL_AUTO_CALL_H_

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>

#include "arenarpc/allocation_mode.h"
#include "arenarpc/grpc/server_options.h"
#include "arenarpc/internal/cpu_clock.h"

namespace arenarpc::internal {

enum class CallKind : uint8_t { kSync, kCallback, kAsync };

// Set by the sync handler around AllocateMessages: the request's wire bytes.
// -1 elsewhere (gRPC's callback handler gives the allocator no word).
inline constinit thread_local double sync_request_bytes = -1;

class AutoMethod;

// One trial: the mode a call runs in and its clock.
struct CallTiming {
  AutoMethod* method = nullptr;  // null: not timed
  AllocationMode mode = AllocationMode::kArena;
  CallKind kind = CallKind::kSync;
  double start_ns = 0;
  double bytes = 0;           // on the wire: the request's, + response
  bool size_request = false;  // callback, async: the request walked at release
  double sized_bytes = -1;    // what that walk found (-1: none)
  double excluded_ns = 0;     // sizing on the clock's thread: not the call's
  double sizing_ns = 0;       // sizing in all: billed
  bool warming = false;       // reuse on a new pool instance
  uint64_t thread = 0;        // the clock's thread and its holder events
  uint64_t events = 0;

  // If `size_request`, walks the request for its bytes: not the call's cost
  // (billed), and added to *excluded when given.
  void SizeRequest(const google::protobuf::Message* request, double* excluded) {
    if (!size_request || request == nullptr) return;
    const double start = ThreadCpuNs();
    sized_bytes = static_cast<double>(request->ByteSizeLong());
    bytes += sized_bytes;
    const double ns = ThreadCpuNs() - start;
    size_request = false;
    sizing_ns += ns;
    if (excluded != nullptr) *excluded += ns;
  }
};

class AutoMethod {
 public:
  // `trim_reuse` gives back the idle instances of the method's reuse pools.
  AutoMethod(std::string name, const AutoOptions& options,
             const google::protobuf::Descriptor* request,
             const google::protobuf::Descriptor* response,
             void (*trim_reuse)());
  AutoMethod(const AutoMethod&) = delete;
  AutoMethod& operator=(const AutoMethod&) = delete;

  AllocationMode mode() const;  // the mode calls run in now
  // The mode of one call; sets *timing (clock started) when it is a trial.
  // `request_bytes`: a sync call's (else ignored).
  AllocationMode ModeForCall(CallKind kind, double request_bytes,
                             CallTiming* timing);
  // A trial ended on its own thread: `cost_ns` is its CPU.
  void Observe(const CallTiming& timing, double cost_ns);
  // A trial not observed: `lost` (its window was not its own), or failed
  // (not OK, cancelled, never came): counted and billed.
  void Unobserved(const CallTiming& timing, bool lost);
  struct State;
  State& state() const { return *state_; }

 private:
  State* const state_;  // never destroyed
};

// The calling thread's identity (never 0, never reused) and its count of
// holder events: a trial's clock is the thread's CPU, so it is the call's
// own only if no other call's messages were made or released in between.
struct ThreadCallEvents {
  uint64_t thread = 0;
  uint64_t events = 0;
};
inline constinit thread_local ThreadCallEvents thread_call_events;
inline constinit std::atomic<uint64_t> next_call_thread{1};
inline uint64_t CallThread() {
  uint64_t& t = thread_call_events.thread;
  if (t == 0) [[unlikely]]
    t = next_call_thread.fetch_add(1, std::memory_order_relaxed);
  return t;
}

// A holder's first member (destroyed last, after its messages): counts the
// thread's holder events, and ends a sync or callback trial.
class TimedCall {
 public:
  explicit TimedCall(const CallTiming& timing) : t_(timing) {
    t_.events = ++thread_call_events.events;
    if (t_.kind == CallKind::kAsync) t_.method = nullptr;  // AsyncCall's
    if (t_.method != nullptr) t_.thread = CallThread();
  }
  TimedCall(const TimedCall&) = delete;
  TimedCall& operator=(const TimedCall&) = delete;
  bool timed() const { return t_.method != nullptr; }
  void Fail() { failed_ = true; }  // the call did not end OK
  ~TimedCall() {
    if (t_.method != nullptr && (failed_ || !InWindow())) {
      t_.method->Unobserved(t_, /*lost=*/!failed_);
    } else if (t_.method != nullptr) {
      t_.method->Observe(t_, ThreadCpuNs() - t_.start_ns - t_.excluded_ns);
    }
    ++thread_call_events.events;
  }
  // The request is freed early (FreeRequest): its bytes now.
  void BeforeFreeRequest(const google::protobuf::Message& request) {
    if (t_.method == nullptr) return;
    t_.SizeRequest(&request, OnThread() ? &t_.excluded_ns : nullptr);
  }
  // Work on the call's thread that is not the call's (shadow's sampling).
  void Exclude(double ns) {
    if (t_.method != nullptr && OnThread()) t_.excluded_ns += ns;
  }
  // At Release: the response's bytes (cached by its serialization) and the
  // request's if still to be walked.
  void AtRelease(const google::protobuf::Message* request,
                 const google::protobuf::Message& response) {
    if (t_.method == nullptr || !InWindow()) return;
    t_.bytes += response.GetCachedSize();
    t_.SizeRequest(request, &t_.excluded_ns);  // on its thread: InWindow()
  }

 private:
  bool OnThread() const { return thread_call_events.thread == t_.thread; }
  bool InWindow() const {
    return OnThread() && thread_call_events.events == t_.events;
  }

  CallTiming t_;
  bool failed_ = false;
};

// The calling thread's async window: arenarpc::NextTag reads the thread's
// CPU before Next() while some async trial is out; Arrived() claims that
// reading for its call, Answered() closes the window. Other calls' messages
// made or released on the thread meanwhile are timed and left out of it.
struct AsyncThreadWindow {
  uint64_t seq = 0;        // NextTag calls on this thread (0: none yet)
  double start_ns = -1;    // the CPU before the last Next (-1: not read)
  double excluded_ns = 0;  // other calls' making and release since then
  bool claimed = false;    // an Arrived() took this Next
  bool tainted = false;    // another call's messages released before that
  bool closed = false;     // Answered() (or an untimed Arrived()) closed it
  bool open() const { return start_ns >= 0 && !closed; }
};
inline constinit thread_local AsyncThreadWindow async_thread_window;

void BeforeAsyncNext();  // NextTag's part before Next()
inline double AsyncExclusionStart() {
  return async_thread_window.open() ? ThreadCpuNs() : -1;
}
void AsyncExclusionEnd(double start_ns);

// One async call's trial (or none).
class AsyncCall {
 public:
  AsyncCall() = default;
  // `timing`: the call's trial (method null: none), its clock started
  // before the messages were made, which ended at `made_at_ns`.
  AsyncCall(AutoMethod* method, const CallTiming& timing, double made_at_ns)
      : method_(method), t_(timing) {
    if (t_.method != nullptr) cost_ns_ = made_at_ns - t_.start_ns;
  }
  AsyncCall(AsyncCall&& o) noexcept { *this = std::move(o); }
  AsyncCall& operator=(AsyncCall&& o) noexcept {
    method_ = std::exchange(o.method_, nullptr);
    t_ = std::exchange(o.t_, {});
    state_ = std::exchange(o.state_, State::kPosted);
    seq_ = o.seq_;
    thread_ = o.thread_;
    cost_ns_ = o.cost_ns_;
    return *this;
  }

  void Arrived();
  void Answered(const google::protobuf::Message* request,
                const google::protobuf::Message& response, bool ok);
  void BeforeFreeRequest(const google::protobuf::Message& request) {
    if (state_ == State::kArrived) SizeRequest(&request);
  }
  // Around the messages' release: the call's own (answered), or another
  // open window's to leave out.
  double BeforeRelease() const {
    if (t_.method != nullptr && state_ == State::kAnswered)
      return ThreadCpuNs();
    return AsyncExclusionStart();
  }
  void AfterRelease(double start_ns);

 private:
  enum class State : uint8_t { kPosted, kArrived, kAnswered, kLost, kFailed };
  void SizeRequest(const google::protobuf::Message* request);

  AutoMethod* method_ = nullptr;  // the method's, even without a trial
  CallTiming t_;                  // t_.method null: no trial
  State state_ = State::kPosted;
  uint64_t seq_ = 0;
  uint64_t thread_ = 0;
  double cost_ns_ = 0;
};

}  // namespace arenarpc::internal

#endif  // ARENARPC_GRPC_INTERNAL_AUTO_CALL_H_
