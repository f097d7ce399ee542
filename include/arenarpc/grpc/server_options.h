// What an install gives a server's methods: the allocation mode, kAuto's
// learning budget, shadow measurement, giving memory back after a burst,
// and a cap on pooled memory. Implicit from a mode, so
// Install*(service, mode) keeps working.
//
//   arenarpc::ServerOptions options(arenarpc::AllocationMode::kAuto);
//   options.automatic.max_cpu_share = 0.01;   // kAuto learns on 1 % of CPU
//   options.idle_trim.idle_ms = 1000;         // trim after 1 s without calls
//   options.max_pooled_bytes = 256 << 20;     // then heap messages
//   r = mysvc::InstallMyServiceAllocators(&service, options);
//
// Process-wide settings: `automatic.max_cpu_share`, `idle_trim.idle_ms`
// and `max_pooled_bytes` act on the whole process, like the pools and the
// measuring thread they govern; when installs set different values, the
// smallest wins (for idle_ms and max_pooled_bytes 0 means "off" and never
// wins over a set value; a max_cpu_share of 0 does). The mode,
// `automatic.recheck_after_s` and `shadow.sample_one_in` are per method;
// shadow's max_cpu_share is process-wide too (arenarpc/grpc/shadow.h).
//
// Thread safety: a plain options struct, copied by the install.
// Lifetime: independent of the service and the server.
#ifndef ARENARPC_GRPC_SERVER_OPTIONS_H_
#define ARENARPC_GRPC_SERVER_OPTIONS_H_

#include <cstdint>
#include <string>

#include "arenarpc/allocation_mode.h"
#include "arenarpc/grpc/shadow.h"

namespace arenarpc {

// kAuto's learning budget: everything kAuto does to decide (serializing
// sampled calls on the call threads, parsing them again in each mode on the
// measuring thread, timing) takes at most `max_cpu_share` of the process's
// CPU (2 % by default; plus a 5 ms start-up credit and the one sample in
// flight; kRealCalls: the calls in flight). Learning samples are taken one
// at a time, when the budget has room: a method settles after a few
// samples (modes surely more expensive stop being measured early;
// arenarpc/mode_chooser.h, AutoLearner), then takes none until a re-check
// `recheck_after_s` later, so a lasting change of traffic is followed
// within that time plus one decision. 0 keeps every kAuto method on kArena
// without measuring (after the start-up credit's few samples).
//
// How kAuto learns (`learn`):
//  - kSideThread: sampled calls' messages are serialized on the call
//    thread and parsed again in every measured mode on one low-priority
//    thread (a paired test: every mode on the same bytes). Its cost: the
//    copies, the parses, the thread; one sample holds a parsed copy.
//  - kRealCalls (sync and callback API unary methods, async ones with the
//    lines below; other async and streaming methods learn on the side
//    thread): while learning, calls
//    are served in turn in each mode still measured and the calling
//    thread's CPU from AllocateMessages to the holder's Release is the
//    call's cost in that mode (per wire byte; an unpaired test,
//    arenarpc/mode_chooser.h). Nothing is copied or parsed again. Its cost,
//    what the budget counts: each measured call's CPU times the share by
//    which its mode is dearer than the cheapest measured so far (calls
//    served in a worse mode), plus its clock reads; a call is measured only
//    while that fits (plus the calls in flight).
//    Sync: gRPC runs the parse, the handler and Release on one thread.
//    Callback: gRPC parses right after AllocateMessages and usually runs
//    the handler and Release on that thread; a call is counted only if its
//    Release runs on the allocating thread with no other call's messages
//    made or released there in between, and its request's bytes are
//    counted at Release (ByteSizeLong, billed; once 8 timed calls in a row
//    agree within 1/64, that size is taken and 1 call in 8 is walked to
//    check: src/grpc/request_sizes.h). Otherwise (a handler that
//    finishes from another thread, a response written later by a poller)
//    the call is lost: not counted, billed at its mode's excess, counted in
//    MeasuredMethodStats::lost_calls. A method that loses more than half of
//    a window of 32 such calls learns on the side thread from then on
//    (callback_fallback, logged once). A call that comes back to its thread
//    after the thread polled counts that polling too (noise, alike for
//    every mode).
//    Async (arenarpc/grpc/async.h): timed with the user's three lines
//    (arenarpc::NextTag instead of cq->Next, CallMessages::Arrived() on the
//    request tag, Answered() after Finish()): gRPC parses the request
//    inside the Next() that returns its tag and Finish() serializes on the
//    calling thread, so the window runs from before that Next() to after
//    Finish(), plus the messages' making and release. A window not the
//    call's own is lost as above (same fallback); without the lines an
//    async method learns on the side thread (kSideThread's way).
//    Streaming: not timed.
//    Every API: a timed call that did not end OK (sync: a non-OK status or
//    cancelled; async: Answered() with a non-OK status, or not answered)
//    is not observed (MeasuredMethodStats::failed_calls); callback calls
//    are observed whatever their status (the allocator does not see it).
//    A reuse call whose message is a new pooled instance (the pool had
//    none idle: it costs what a fresh arena does, once) is not observed
//    either, up to 32 a decision (MeasuredMethodStats::warming_calls): it
//    measures the pool warming, not reuse.
//
// Memory: what learning leaves behind is given back, so that a
// learning method does not hold every mode's memory at once (reuse's
// instances, arena's cached pages and the heap a heap call grows). When
// calls stop running in a mode (the lead moves them, the mode is dropped),
// when a method settles (every mode but the chosen one), and after each
// heap or arena call of 256 KiB or more served while calls run in another
// mode (a trial; a reuse trial keeps its instance, which is what makes
// reuse cheap, until the method settles in another mode: a reuse call
// ending after that, such as an async server's call posted before the
// decision, gives it back), that mode's idle memory is released on a
// low-priority thread
// ("arenarpc auto memory", nice 19, started on the first release, never
// stopped): heap: malloc_trim(0); arena and reuse: every thread's idle pooled
// arenas (ReleaseIdleArenas), the page pool's idle thread caches and depot
// (PagePool::ReleaseIdleCaches, Trim), and for reuse the method's
// MessagePools' idle instances. Only idle memory: a call keeps what it
// uses. Its CPU is billed to the learning budget once it ran (a release is
// never refused; there is at most one per trial and one per move). What it
// costs besides: the next call in a released mode takes its pages afresh
// (page faults, billed to that call: so while learning a large method,
// heap's and arena's trials are measured dearer than they run, which only
// matters where they are within that much of the best), and since the
// pools are process-wide, other methods' calls take again what a release
// emptied.
// Measured on the sync corpus: docs/DESIGN_NOTES.md, "Memory while
// learning".
enum class AutoLearning { kSideThread, kRealCalls };

// kRealCalls: confirming a close decision by the whole process's CPU. A
// call's own thread does not see what a mode costs on gRPC's other threads:
// on OTLP metrics the real calls timed reuse 4-5 % cheaper per call while
// the process spent 5 % less with arena (kept output:
// docs/raw/auto_budget/quiet_sync/summary.md). When a real-call decision
// settles with another mode within `within` of the chosen one per byte, the
// method's calls run in epochs, each all in one mode, the chosen mode A and its
// rival B in the order A B B A A B B A ... (drift cancels), each epoch's
// cost the process's CPU over it per request byte of the method's calls
// (per call on the callback API); after `pairs` pairs B is taken only if
// it is cheaper by a one-sided paired t test at 5 % (so a mode not cheaper
// is taken in at most 5 % of confirmations); inconclusive keeps A. One
// method of the process confirms at a time; the others keep their modes.
// An epoch lasts at least `epoch_calls` calls and `epoch_s` seconds: with
// the defaults a confirmation takes 16 epochs, 4 s of traffic at 64 calls/s
// or more, 256 calls below (5.3 s at 48 calls/s, 9.5 s at 27). Its cost,
// billed to the learning budget above (a pair starts only when it has
// room): the epochs in the dearer mode, by how much they are dearer, so
// about half the difference between the two modes while it runs (2.5 % of
// the method's CPU for 4 s on modes 5 % apart). An epoch longer than 5 s
// (rare calls) is thrown away with its pair. Each re-check that settles
// close confirms again.
// Off by default (within = 0): on the sync corpus one epoch pair's log
// ratio varied by 5-13 % (standard deviation), so 8 pairs left 7 of 8
// confirmations inconclusive; taking a mode 5 % cheaper with 80 % power
// needs about 6-40 pairs (docs/DESIGN_NOTES.md, "Confirming by the
// process's CPU"). For a long-running server (unmeasured): within =
// 0.15, pairs = 40.
struct AutoConfirmOptions {
  double within = 0;  // 0: off; 0.15 confirms rivals within 15 %
  int pairs = 8;
  int epoch_calls = 16;
  double epoch_s = 0.25;
};

// kRealCalls: what is known before measuring (the prior). On every
// service of 50 KB and more measured so far (the corpus's OTLP traces,
// metrics and logs, HoraeDB, Cortex; our own) heap lost: its timed calls
// cost 1.14-3.4x the best mode's on the sync corpus (74-847 KB), 2.2-3.4x
// on HoraeDB and Cortex, so measuring it spent most of the learning
// budget, and Cortex (847 KB) did not settle within 18 s. With the prior
// Cortex settled in 4.8-5.5 s on reuse, never trying heap (sync API,
// bench/corpus/README.md, "auto's prior"). A method whose timed calls
// carry at least `min_bytes` on the wire (request and response, geometric
// mean) decides between arena and reuse only: heap is never put on trial
// unless the evidence asks for it, i.e. the cheapest mode measured costs
// less than `heap_ns_per_byte` of CPU per wire byte at a look (bulk bytes
// and few objects, where allocation matters little and heap may be as
// cheap; the corpus's large services cost 1-7 ns a byte in arena, HoraeDB
// down to 1.0 in one loaded round, where 1.0 took heap back in). A
// method's first decision starts without heap and takes it in on the first
// timed call that shows the method smaller. Each re-check applies the
// prior again. Stats: MeasuredMethodStats::decision_source is kPrior for a
// decision taken without heap. `min_bytes = 0`: off (every mode measured,
// as before). Side-thread learning (paired samples) measures every mode.
struct AutoPriorOptions {
  double min_bytes = 48 << 10;
  double heap_ns_per_byte = 0.5;
};

// Remembering decisions (`decisions_path`, empty: off). A file of settled
// decisions (JSON; per method: its full name, request and response message
// types and a fingerprint of their descriptors, the mode, the cost per call
// of each mode measured, the calls, when; the protobuf version of the
// file): at install, a kAuto method whose entry matches (same method, same
// types and fingerprint, same protobuf version, a known file version)
// starts settled in that mode with no trials (decision_source kLoaded) and
// only re-checks, recheck_after_s later. An entry that does not match, or
// a file that cannot be read or parsed, is ignored with one line on
// stderr; calls go on, learning as without it. With `save_decisions` (the
// default), each decision a method settles is written back (all kAuto
// methods of the process, entries of methods not installed here kept),
// off the call path, atomically (a temporary file in the same directory,
// then rename), at most once a second. Explicit calls:
// arenarpc/grpc/auto_decisions.h (SaveAutoDecisions, LoadAutoDecisions).
struct AutoOptions {
  double max_cpu_share = 0.02;
  double recheck_after_s = 30;
  AutoPriorOptions prior;      // per method
  std::string decisions_path;  // process-wide: the first install's
  bool save_decisions = true;
  // kRealCalls by default: side by side on the sync corpus it settled OTLP
  // logs in 85-96 calls (1.7-2.0 s) and traces in 11-13 s where the side
  // thread had not in 18 s, measuring 0.01-2.9 % of the CPU (side thread
  // 0.3-4.1 %), CPU per call alike within the run's noise; on the callback
  // API the same logs in 86-129 calls (1.8-2.7 s), 0-10 % of timed calls
  // lost to a thread change on OTLP, while small calls at 1,000 calls/s
  // lost 84-100 % and fell back to the side thread (docs/MEASURE.md,
  // "auto on the callback API").
  AutoLearning learn = AutoLearning::kRealCalls;
  AutoConfirmOptions confirm;  // per method
};

// Giving memory back after a burst (off by default): the first install
// that sets idle_ms starts one low-priority thread (nice 19, never stopped)
// that, once no call was allocated, no streamed message handed out
// (StreamMessages, StreamArena) and the measuring thread (kAuto, shadow
// measurement) finished no sample for idle_ms, trims once per idle period:
// the shared depot of every registered MessagePool (MessagePool::Trim) and
// the instances its idle threads cache (MessagePool::ReleaseIdleCaches),
// every thread's pooled arenas and page cache (ReleaseIdleArenas,
// PagePool::ReleaseIdleCaches: gRPC's idle threads would pin them), the
// page pool's depot (PagePool::Trim) and, with glibc, the process heap
// (malloc_trim(0): free blocks in every arena and the main arena's top, not
// the top of a thread arena, which glibc keeps up to its M_TRIM_THRESHOLD;
// docs/OPERATE.md, "Memory"). If the thread cannot start, there is no
// trimming: GrpcStats::background_thread_failures.
struct IdleTrimOptions {
  int idle_ms = 0;  // 0: off
};

struct ServerOptions {
  ServerOptions(AllocationMode m = AllocationMode::kArena)  // NOLINT
      : mode(m) {}
  AllocationMode mode;
  ShadowOptions shadow;   // arenarpc/grpc/shadow.h
  AutoOptions automatic;  // kAuto's learning budget
  IdleTrimOptions idle_trim;
  // Cap on the pooled memory of the process (PagePool::Default()'s mapped
  // bytes: arena pages in use and cached, kReuse's instances included);
  // 0: none. While over it, new calls in arena and reuse modes get plain
  // heap messages (counted: GrpcStats::over_cap_heap_calls) and the depots
  // are trimmed at once, so pooled memory stops growing; calls are never
  // failed (a MessageAllocator cannot fail a call; to reject load, limit
  // streams and memory in gRPC itself, see docs/OPERATE.md).
  uint64_t max_pooled_bytes = 0;
};

namespace internal {
// Starts idle trimming and sets the pooled-memory cap (src/grpc/idle_trim.cc).
void ApplyServerLimits(const ServerOptions& options);
}  // namespace internal

}  // namespace arenarpc

#endif  // ARENARPC_GRPC_SERVER_OPTIONS_H_
