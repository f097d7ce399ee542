// Internal: what a call's request and response are made of in each mode,
// as grpc::MessageHolders (gRPC calls AllocateMessages, then the handler,
// then Release; FreeRequest in between if the handler drops the request
// early). Not a public API; the allocators' templates
// (arenarpc/grpc/allocators.h) make them.
//
// Thread safety: a holder is used by one call at a time, as gRPC
// guarantees.
// Lifetime: a holder deletes itself in Release().
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
#include "arenarpc/message_pool.h"

namespace arenarpc::internal {

// Every holder of the allocators below. RequestDone(): the sync adapter is
// done with the request once the handler returned (sync_handler.h), so it
// frees it then, before the response is serialized, as gRPC's own sync
// handler does; FreeRequest() without counting it as the handler's.
// Timed(): kAuto times this call (a trial); Failed(): it did not end OK,
// so its time is not observed (TimedCall::Fail).
template <class Req, class Resp>
class CallHolder : public ::grpc::MessageHolder<Req, Resp> {
 public:
  virtual void RequestDone() = 0;
  virtual bool Timed() const = 0;
  virtual void Failed() = 0;
};

// kHeap's holder: request and response inside it.
template <class Req, class Resp>
class HeapHolder final : public CallHolder<Req, Resp> {
 public:
  explicit HeapHolder(ShadowMeter* sampler, const CallTiming& timing = {})
      : timed_(timing), request_(std::in_place), sampled_(sampler) {
    this->set_request(&*request_);
    this->set_response(&response_);
  }
  void FreeRequest() override { Free(/*counted=*/true); }
  void RequestDone() override { Free(/*counted=*/false); }
  bool Timed() const override { return timed_.timed(); }
  void Failed() override { timed_.Fail(); }
  void Release() override {
    timed_.Exclude(sampled_.AtRelease(this->request(), response_));
    timed_.AtRelease(this->request(), response_);
    RecordRelease(AllocationMode::kHeap, 0);
    delete this;
  }

 private:
  void Free(bool counted) {
    if (!request_.has_value()) return;
    if (counted) RecordFreeRequest(AllocationMode::kHeap);
    timed_.Exclude(sampled_.BeforeFreeRequest(*request_));
    timed_.BeforeFreeRequest(*request_);
    this->set_request(nullptr);
    request_.reset();
  }

  TimedCall timed_;
  std::optional<Req> request_;
  Resp response_;
  SampledCall sampled_;
};

// kArena's holder: it owns the call's two arenas.
template <class Req, class Resp>
class ArenaHolder final : public CallHolder<Req, Resp> {
 public:
  explicit ArenaHolder(ShadowMeter* sampler, const CallTiming& timing = {})
      : timed_(timing), request_arena_(std::in_place), sampled_(sampler) {
    this->set_request(request_arena_->template Create<Req>());
    this->set_response(response_arena_.template Create<Resp>());
  }
  void FreeRequest() override { Free(/*counted=*/true); }
  void RequestDone() override { Free(/*counted=*/false); }
  bool Timed() const override { return timed_.timed(); }
  void Failed() override { timed_.Fail(); }
  void Release() override {
    timed_.Exclude(sampled_.AtRelease(this->request(), *this->response()));
    timed_.AtRelease(this->request(), *this->response());
    uint64_t bytes = response_arena_.SpaceAllocated();
    bytes += request_arena_.has_value() ? request_arena_->SpaceAllocated()
                                        : request_bytes_;
    RecordRelease(AllocationMode::kArena, bytes);
    delete this;
  }

 private:
  void Free(bool counted) {
    if (!request_arena_.has_value()) return;
    if (counted) RecordFreeRequest(AllocationMode::kArena);
    request_bytes_ = request_arena_->SpaceAllocated();
    timed_.Exclude(sampled_.BeforeFreeRequest(*this->request()));
    timed_.BeforeFreeRequest(*this->request());
    this->set_request(nullptr);
    request_arena_.reset();  // destroys the request, pages back to the pool
  }

  TimedCall timed_;
  std::optional<ScopedArena> request_arena_;
  ScopedArena response_arena_;
  uint64_t request_bytes_ = 0;
  SampledCall sampled_;
};

// kReuse's holder: it owns the two borrowed PooledMessages.
template <class Req, class Resp>
class ReuseHolder final : public CallHolder<Req, Resp> {
 public:
  ReuseHolder(PooledMessage<Req> request, PooledMessage<Resp> response,
              ShadowMeter* sampler, const CallTiming& timing = {})
      : timed_(timing),
        request_(std::move(request)),
        response_(std::move(response)),
        sampled_(sampler) {
    this->set_request(request_.get());
    this->set_response(response_.get());
  }
  void FreeRequest() override { Free(/*counted=*/true); }
  void RequestDone() override { Free(/*counted=*/false); }
  bool Timed() const override { return timed_.timed(); }
  void Failed() override { timed_.Fail(); }
  void Release() override {
    timed_.Exclude(sampled_.AtRelease(this->request(), *response_));
    timed_.AtRelease(this->request(), *response_);
    RecordRelease(AllocationMode::kReuse, 0);
    // The pool sizes the response from the cached size gRPC's
    // serialization left (no second walk).
    delete this;
  }

 private:
  void Free(bool counted) {
    if (!request_) return;
    if (counted) RecordFreeRequest(AllocationMode::kReuse);
    timed_.Exclude(sampled_.BeforeFreeRequest(*request_));
    timed_.BeforeFreeRequest(*request_);
    this->set_request(nullptr);
    request_.reset();  // cleared and back to its pool
  }

  TimedCall timed_;
  PooledMessage<Req> request_;
  PooledMessage<Resp> response_;
  SampledCall sampled_;
};

}  // namespace arenarpc::internal

#endif  // ARENARPC_GRPC_INTERNAL_HOLDERS_H_
