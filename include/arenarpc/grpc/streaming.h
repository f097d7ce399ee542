// Pooled messages for streaming methods (server-, client- and
// bidi-streaming; sync and callback API), with the unary path's modes,
// auto, stats and kill switch.
//
//   // Once per method, before the server starts (reported like an install):
//   arenarpc::StreamMethod<Point, RouteSummary> record(
//       "routeguide.RouteGuide/RecordRoute", arenarpc::AllocationMode::kAuto);
//
//   // Sync API (gRPC's route_guide), client-streaming: one line changes.
//   class RouteGuideImpl final : public RouteGuide::Service {
//     grpc::Status RecordRoute(grpc::ServerContext*,
//                              grpc::ServerReader<Point>* reader,
//                              RouteSummary* summary) override {
//       arenarpc::StreamMessages<Point> points = record.Requests();
//       while (reader->Read(points.Next())) Visit(*points);   // was &point
//       return grpc::Status::OK;
//     }
//   };
//   // Writes: Feature* f = out.Next(); Fill(f); writer->Write(*f);
//
//   // Callback API: the reactor owns the StreamMessages; OnDone ends them.
//   class Reader : public grpc::ServerReadReactor<Point> {
//     Reader() : points_(record.Requests()) { StartRead(points_.Next()); }
//     void OnReadDone(bool ok) override {
//       if (!ok) return Finish(grpc::Status::OK);
//       Visit(*points_);
//       StartRead(points_.Next());     // the previous point is released
//     }
//     void OnDone() override { delete this; }
//     arenarpc::StreamMessages<Point> points_;
//   };
//
// Each Next() releases the previous message and hands out a fresh one in
// the method's mode, so a stream holds one message per StreamMessages
// whatever its length (docs/ADOPT.md, "Streaming methods"). The kill switch
// and max_pooled_bytes make messages heap ones.
//
// Thread safety: StreamMethod is thread-safe. A StreamMessages is used by
// one thread at a time (a reactor's OnReadDone runs after the read it
// completes); give reads and writes one each.
// Lifetime: a message lives until the next Next(), Release() or the
// StreamMessages' end, and must not be replaced while a read or write into
// it is in flight. A StreamMethod must outlive its streams.
#ifndef ARENARPC_GRPC_STREAMING_H_
#define ARENARPC_GRPC_STREAMING_H_

#include <google/protobuf/message.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>

#include "arenarpc/arena.h"
#include "arenarpc/grpc/install.h"
#include "arenarpc/grpc/server.h"
#include "arenarpc/message_pool.h"

namespace arenarpc {

// Every StreamMessages of the process summed (Prometheus:
// arenarpc_grpc_streaming_*), read without stopping the streams.
struct StreamTotals {
  uint64_t streams = 0;         // StreamMessages alive now
  uint64_t streams_opened = 0;  // made so far
  // Messages handed out by Next(), by the mode each ran in.
  std::array<uint64_t, kNumAllocationModes> messages = {};
  uint64_t live_messages = 0;  // handed out, not yet released
  uint64_t arena_resets = 0;   // arena messages released (pages recycled)
  uint64_t arena_bytes = 0;    // their arenas' bytes, summed
  uint64_t sampled = 0;        // messages sampled by shadow measurement
};
StreamTotals GetStreamTotals();

namespace internal {
void RecordStreamOpen();
void RecordStreamClose();
void RecordStreamMessage(AllocationMode mode);
void RecordStreamRelease(AllocationMode mode, uint64_t arena_bytes,
                         bool sampled);

// A stream method's kAuto learner and shadow meter (each null when off).
struct StreamMeters {
  AutoMethod* automatic = nullptr;
  ShadowMeter* shadow = nullptr;
};
}  // namespace internal

// One stream's messages in one direction. Move-only (not while a read or
// write into the current message is in flight).
template <class T>
class StreamMessages {
  using Message = google::protobuf::Message;

 public:
  StreamMessages(StreamMessages&& o) noexcept
      : meters_(o.meters_),
        empty_response_(o.empty_response_),
        mode_(o.mode_),
        running_(o.running_),
        sampled_(std::exchange(o.sampled_, false)),
        message_(std::exchange(o.message_, nullptr)),
        arena_(std::exchange(o.arena_, std::nullopt)),
        pooled_(std::move(o.pooled_)),
        heap_(std::move(o.heap_)),
        messages_(o.messages_),
        peak_arena_bytes_(o.peak_arena_bytes_) {
    if (o.timed_.has_value()) {  // moved mid-message: its trial is dropped
      o.timed_->Fail();
      o.timed_.reset();
    }
    internal::RecordStreamOpen();
  }
  ~StreamMessages() {
    Release();
    internal::RecordStreamClose();
  }

  // Releases the current message and returns a fresh, empty one (heap
  // Requests(): the same one, emptied by the Read that fills it).
  T* Next() {
    Release();
    internal::CallTiming timing;
    // A streamed message is timed like a callback call: from here to its
    // release at the next Next(), on one thread.
    running_ = internal::CallMode(mode_, meters_.automatic,
                                  internal::CallKind::kCallback, 0, &timing);
    sampled_ = meters_.shadow != nullptr && meters_.shadow->ShouldSample();
    if (running_ == AllocationMode::kArena) {
      message_ = arena_.emplace().template Create<T>();
    } else if (running_ == AllocationMode::kReuse) {
      pooled_ = DefaultMessagePool<T>().Acquire();
      message_ = pooled_.get();
    } else if (heap_ == nullptr) {
      message_ = (heap_ = std::make_unique<T>()).get();
    } else {  // as gRPC's own loop; the parse clears incoming ones
      if (!incoming()) heap_->Clear();
      message_ = heap_.get();
    }
    if (running_ != AllocationMode::kHeap) heap_.reset();
    if (timing.method != nullptr) timed_.emplace(timing);
    internal::RecordStreamMessage(running_);
    ++messages_;
    return message_;
  }

  // Releases the current message now (heap mode keeps it for the next
  // Next()); get() is null until then.
  void Release() {
    if (message_ == nullptr) return;
    const double sampling_ns = sampled_ ? Sample() : 0;
    if (timed_.has_value()) {
      timed_->Exclude(sampling_ns);
      timed_->AtRelease(message_, T::default_instance());
    }
    uint64_t bytes = 0;
    if (running_ == AllocationMode::kArena) {
      bytes = arena_->SpaceAllocated();
      peak_arena_bytes_ = std::max(peak_arena_bytes_, bytes);
      arena_.reset();  // pages back to the pool
    }
    pooled_.reset();  // reuse: cleared into its pool (heap's is kept)
    internal::RecordStreamRelease(running_, bytes, sampled_);
    message_ = nullptr;
    sampled_ = false;
    timed_.reset();  // the trial ends with the release
  }

  T* get() const { return message_; }
  T* operator->() const { return message_; }
  T& operator*() const { return *message_; }

  // Messages so far, and the largest arena one (what bounds memory).
  uint64_t messages() const { return messages_; }
  uint64_t peak_arena_bytes() const { return peak_arena_bytes_; }
  // The mode the current (or last) message ran in.
  AllocationMode mode() const { return running_; }

 private:
  template <class Req, class Resp>
  friend class StreamMethod;
  // `empty_response`: the method's response prototype for its requests,
  // null for its responses.
  StreamMessages(AllocationMode mode, internal::StreamMeters meters,
                 const Message* empty_response)
      : meters_(meters),
        empty_response_(empty_response),
        mode_(mode),
        running_(mode) {
    internal::RecordStreamOpen();
  }

  bool incoming() const { return empty_response_ != nullptr; }

  // Shadow: the message goes to the background thread as a call's request
  // (with an empty response) or response. Returns the CPU it spent (ns).
  double Sample() {
    const double start = internal::ThreadCpuNs();
    internal::SampleBytes bytes = incoming()
                                      ? internal::SampleBytes::Of(*message_)
                                      : internal::SampleBytes();
    meters_.shadow->Submit(
        std::move(bytes),
        incoming() ? *empty_response_ : *static_cast<const Message*>(message_),
        internal::ThreadCpuNs() - start);
    return internal::ThreadCpuNs() - start;
  }

  internal::StreamMeters meters_;
  const Message* empty_response_;
  AllocationMode mode_;     // installed
  AllocationMode running_;  // of the current message
  bool sampled_ = false;
  std::optional<internal::TimedCall> timed_;  // kAuto's trial, if any
  T* message_ = nullptr;
  std::optional<ScopedArena> arena_;
  PooledMessage<T> pooled_;
  std::unique_ptr<T> heap_;
  uint64_t messages_ = 0;
  uint64_t peak_arena_bytes_ = 0;
};

// A streaming method: where its streams' messages come from. Constructing
// it is the method's install; installing it again with other kAuto or
// shadow options is refused: its streams are heap ones, report() says why.
template <class Req, class Resp>
class StreamMethod {
 public:
  // `method`: "pkg.Service/Method"; `options`, or a mode; `api`: how the
  // service implements it (for stats).
  StreamMethod(std::string_view method, const ServerOptions& options,
               ServerApi api = ServerApi::kSync) {
    auto choice = internal::AllocatorFor<Req, Resp>(options, method, api,
                                                    /*unary=*/false);
    if (choice.report.served) mode_ = choice.report.mode;
    if (choice.metered != nullptr) {
      meters_ = {choice.metered->automatic(), choice.metered->shadow()};
    }
    report_ = std::move(choice.report);
  }
  StreamMethod(const StreamMethod&) = delete;
  StreamMethod& operator=(const StreamMethod&) = delete;

  // A stream's incoming (client-/bidi-streaming) messages.
  StreamMessages<Req> Requests() const {
    return StreamMessages<Req>(mode_, meters_, &Resp::default_instance());
  }
  // A stream's outgoing (server-/bidi-streaming) messages.
  StreamMessages<Resp> Responses() const {
    return StreamMessages<Resp>(mode_, meters_, nullptr);
  }
  const MethodInstall& report() const { return report_; }

 private:
  AllocationMode mode_ = AllocationMode::kHeap;
  internal::StreamMeters meters_;
  MethodInstall report_;
};

}  // namespace arenarpc

#endif  // ARENARPC_GRPC_STREAMING_H_
