// Internal: a call's request and response in each mode, as the
// grpc::MessageHolders the allocators (arenarpc/grpc/allocators.h) make.
// Thread safety: a holder is used by one call at a time, as gRPC
// guarantees. Lifetime: a holder deletes itself in Release().
#ifndef ARENARPC_GRPC_INTERNAL_HOLDERS_H_
#define ARENARPC_GRPC_INTERNAL_HOLDERS_H_

#include <grpcpp/support/message_allocator.h>

#include <cstdint>
#include <optional>
#include <utility>

#include "arenarpc/allocation_mode.h"
#include "arenarpc/arena.h"
#include "arenarpc/grpc/internal/auto_call.h"
#include "arenarpc/grpc/internal/counters.h"
#include "arenarpc/grpc/internal/shadow_meter.h"
#include "arenarpc/grpc/internal/shed.h"
#include "arenarpc/message_pool.h"

namespace arenarpc::internal {

// Every holder; each mode's destroys the request in DropRequest().
// RequestDone(): FreeRequest() not counted as the handler's (the sync
// adapter's, once the handler returned). Timed(): kAuto times this call;
// Failed(): it did not end OK, so its time is not observed.
template <class Req, class Resp>
class CallHolder : public ::grpc::MessageHolder<Req, Resp> {
 public:
  void FreeRequest() override { Free(/*counted=*/true); }
  void RequestDone() { Free(/*counted=*/false); }
  bool Timed() const { return timed_.timed(); }
  void Failed() { timed_.Fail(); }
  void Release() override {
    timed_.Exclude(sampled_.AtRelease(this->request(), *this->response()));
    timed_.AtRelease(this->request(), *this->response());
    // Counted released last: a reader who sees no call in flight finds the
    // limit free and the messages gone.
    const AllocationMode mode = mode_;
    const uint64_t arena_bytes = ArenaBytes();
    InFlightLimit* const limit = limit_;
    delete this;
    if (limit != nullptr) limit->Done();
    RecordRelease(mode, arena_bytes);
  }
  // A call counted against max_calls_in_flight until its messages are gone.
  void set_limit(InFlightLimit* limit) { limit_ = limit; }

 protected:
  CallHolder(AllocationMode mode, ShadowMeter* sampler,
             const CallTiming& timing)
      : timed_(timing), sampled_(sampler), mode_(mode) {}
  virtual void DropRequest() = 0;
  virtual uint64_t ArenaBytes() { return 0; }

 private:
  void Free(bool counted) {
    if (this->request() == nullptr) return;
    if (counted) RecordFreeRequest(mode_);
    timed_.Exclude(sampled_.BeforeFreeRequest(*this->request()));
    timed_.BeforeFreeRequest(*this->request());
    this->set_request(nullptr);
    DropRequest();
  }

  // A base's member: destroyed after the mode's messages.
  TimedCall timed_;
  SampledCall sampled_;
  const AllocationMode mode_;
  InFlightLimit* limit_ = nullptr;
};

template <class Req, class Resp>
class HeapHolder final : public CallHolder<Req, Resp> {
 public:
  explicit HeapHolder(ShadowMeter* sampler, const CallTiming& timing = {})
      : CallHolder<Req, Resp>(AllocationMode::kHeap, sampler, timing),
        request_(std::in_place) {
    this->set_request(&*request_);
    this->set_response(&response_);
  }

 private:
  void DropRequest() override { request_.reset(); }

  std::optional<Req> request_;
  Resp response_;
};

// kArena's owns the call's two arenas.
template <class Req, class Resp>
class ArenaHolder final : public CallHolder<Req, Resp> {
 public:
  explicit ArenaHolder(ShadowMeter* sampler, const CallTiming& timing = {})
      : CallHolder<Req, Resp>(AllocationMode::kArena, sampler, timing),
        request_arena_(std::in_place) {
    this->set_request(request_arena_->template Create<Req>());
    this->set_response(response_arena_.template Create<Resp>());
  }

 private:
  void DropRequest() override {
    request_bytes_ = request_arena_->SpaceAllocated();
    request_arena_.reset();  // destroys the request, pages back to the pool
  }
  uint64_t ArenaBytes() override {
    return response_arena_.SpaceAllocated() +
           (request_arena_.has_value() ? request_arena_->SpaceAllocated()
                                       : request_bytes_);
  }

  std::optional<ScopedArena> request_arena_;
  ScopedArena response_arena_;
  uint64_t request_bytes_ = 0;
};

// kReuse's borrows two PooledMessages (the pool sizes the response from
// the cached size gRPC's serialization left).
template <class Req, class Resp>
class ReuseHolder final : public CallHolder<Req, Resp> {
 public:
  ReuseHolder(PooledMessage<Req> request, PooledMessage<Resp> response,
              ShadowMeter* sampler, const CallTiming& timing = {})
      : CallHolder<Req, Resp>(AllocationMode::kReuse, sampler, timing),
        request_(std::move(request)),
        response_(std::move(response)) {
    this->set_request(request_.get());
    this->set_response(response_.get());
  }

 private:
  void DropRequest() override { request_.reset(); }  // cleared, to its pool

  PooledMessage<Req> request_;
  PooledMessage<Resp> response_;
};

}  // namespace arenarpc::internal

#endif  // ARENARPC_GRPC_INTERNAL_HOLDERS_H_
