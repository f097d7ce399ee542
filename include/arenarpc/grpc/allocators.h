// The allocation modes as grpc::MessageAllocators, giving each unary call
// its request and response. An install (arenarpc/grpc/install.h) chooses
// among them from ServerOptions; use them directly only where gRPC takes an
// allocator and no install applies (docs/DESIGN.md, "gRPC: the server
// allocators").
//
//   // The process-wide allocator of a mode, kill switch applied:
//   service.SetMessageAllocatorFor_Echo(
//       arenarpc::DefaultMessageAllocator<EchoRequest, EchoResponse>(
//           arenarpc::AllocationMode::kReuse));
//
//   // In a callback handler, optionally drop the request early (every
//   // mode frees it):
//   context->GetRpcAllocatorState()->FreeRequest();
//
// Modes: docs/MODES.md. Over max_pooled_bytes calls get heap messages; the
// kill switch makes every mode kHeap. After FreeRequest() the handler must
// not touch the request.
//
// Thread safety: allocators are thread-safe; a call's holder is used by one
// call at a time, as gRPC guarantees.
// Lifetime: DefaultMessageAllocator()'s allocators, DefaultMessagePool()'s
// pools and an install's MeteredMessageAllocator are process-wide and never
// destroyed. An allocator you make yourself must outlive the server.
#ifndef ARENARPC_GRPC_ALLOCATORS_H_
#define ARENARPC_GRPC_ALLOCATORS_H_

#include <google/protobuf/message.h>
#include <grpcpp/support/message_allocator.h>

#include <chrono>
#include <string>
#include <type_traits>
#include <utility>

#include "arenarpc/allocation_mode.h"
#include "arenarpc/grpc/internal/auto_call.h"
#include "arenarpc/grpc/internal/counters.h"
#include "arenarpc/grpc/internal/holders.h"
#include "arenarpc/grpc/internal/shadow_meter.h"
#include "arenarpc/grpc/kill_switch.h"
#include "arenarpc/grpc/server_options.h"
#include "arenarpc/message_pool.h"
#include "arenarpc/metrics.h"

namespace arenarpc {

namespace internal {
template <class T>
std::string MessageTypeName() {
  return std::string(T::descriptor()->full_name());
}
// What names a method that was installed without its gRPC name.
template <class Req, class Resp>
std::string TypePairName() {
  return MessageTypeName<Req>() + " -> " + MessageTypeName<Resp>();
}
// Trims a MessagePool<T>'s depot and the caches of threads idle that long.
template <class T>
void TrimPool(void* pool, std::chrono::milliseconds idle_for) {
  static_cast<MessagePool<T>*>(pool)->Trim();
  static_cast<MessagePool<T>*>(pool)->ReleaseIdleCaches(idle_for);
}
}  // namespace internal

// kReuse's pool of T, one per process; its stats and trimming are
// registered on first use.
template <class T>
MessagePool<T>& DefaultMessagePool() {
  static MessagePool<T>* const pool = [] {
    auto* p = new MessagePool<T>();
    internal::RegisterMessagePool(internal::MessageTypeName<T>(),
                                  /*used_by_grpc=*/true, p,
                                  [p] { return p->Stats(); });
    internal::RegisterMessagePoolTrim(&internal::TrimPool<T>, p);
    return p;
  }();
  return *pool;
}

namespace internal {
// kAuto: gives back a method's idle kReuse instances once it leaves reuse.
template <class Req, class Resp>
void TrimDefaultMessagePools() {
  TrimPool<Req>(&DefaultMessagePool<Req>(), std::chrono::milliseconds(0));
  TrimPool<Resp>(&DefaultMessagePool<Resp>(), std::chrono::milliseconds(0));
}

// The mode a call (or streamed message) of a method installed in
// `installed` runs in: heap over the pooled-memory cap (no trial handed
// out), else kAuto's pick (*timing set for a trial).
inline AllocationMode CallMode(AllocationMode installed, AutoMethod* automatic,
                               CallKind kind, double request_bytes,
                               CallTiming* timing) {
  if (installed != AllocationMode::kHeap && OverPooledCap()) {
    return AllocationMode::kHeap;
  }
  if (automatic == nullptr) return installed;
  return automatic->ModeForCall(kind, request_bytes, timing);
}

// A call's holder in `mode` (not kAuto), counted; kReuse's messages from
// the given pools (null: the default ones).
template <class Req, class Resp>
CallHolder<Req, Resp>* NewHolder(AllocationMode mode, ShadowMeter* sampler,
                                 CallTiming* timing,
                                 MessagePool<Req>* requests = nullptr,
                                 MessagePool<Resp>* responses = nullptr) {
  RecordAllocate(mode);
  switch (mode) {
    case AllocationMode::kArena:
      return new ArenaHolder<Req, Resp>(sampler, *timing);
    case AllocationMode::kReuse: {
      PooledMessage<Req> request =
          (requests != nullptr ? *requests : DefaultMessagePool<Req>())
              .Acquire();
      PooledMessage<Resp> response =
          (responses != nullptr ? *responses : DefaultMessagePool<Resp>())
              .Acquire();
      timing->warming = request.new_instance() || response.new_instance();
      return new ReuseHolder<Req, Resp>(std::move(request), std::move(response),
                                        sampler, *timing);
    }
    default:
      return new HeapHolder<Req, Resp>(sampler, *timing);
  }
}

template <class Req, class Resp, AllocationMode kMode>
class FixedMessageAllocator : public ::grpc::MessageAllocator<Req, Resp> {
 public:
  ::grpc::MessageHolder<Req, Resp>* AllocateMessages() override {
    CallTiming timing;
    return NewHolder<Req, Resp>(
        CallMode(kMode, nullptr, CallKind::kCallback, 0, &timing), nullptr,
        &timing, requests_, responses_);
  }

 protected:
  MessagePool<Req>* requests_ = nullptr;
  MessagePool<Resp>* responses_ = nullptr;
};
}  // namespace internal

template <class Req, class Resp>
class HeapMessageAllocator final
    : public internal::FixedMessageAllocator<Req, Resp, AllocationMode::kHeap> {
};

template <class Req, class Resp>
class ArenaMessageAllocator final
    : public internal::FixedMessageAllocator<Req, Resp,
                                             AllocationMode::kArena> {};

template <class Req, class Resp>
class ReuseMessageAllocator final
    : public internal::FixedMessageAllocator<Req, Resp,
                                             AllocationMode::kReuse> {
 public:
  // Pools must outlive the allocator; by default the shared ones.
  ReuseMessageAllocator(
      MessagePool<Req>* requests = &DefaultMessagePool<Req>(),
      MessagePool<Resp>* responses = &DefaultMessagePool<Resp>()) {
    this->requests_ = requests;
    this->responses_ = responses;
  }
};

// kAuto, or any mode with shadow measurement, per method: each call in the
// method's mode (kAuto: the learner's pick), a sampled few measured off the
// request path.
template <class Req, class Resp>
class MeteredMessageAllocator final
    : public ::grpc::MessageAllocator<Req, Resp> {
 public:
  MeteredMessageAllocator(std::string name, const ServerOptions& options)
      : options_(options),
        auto_(options.mode != AllocationMode::kAuto
                  ? nullptr
                  : new internal::AutoMethod(
                        name, options.automatic, Req::descriptor(),
                        Resp::descriptor(),
                        &internal::TrimDefaultMessagePools<Req, Resp>)),
        shadow_(options.shadow.sample_one_in <= 0
                    ? nullptr
                    : new internal::ShadowMeter(
                          std::move(name), options.mode, options.shadow,
                          &Req::default_instance(), &Resp::default_instance(),
                          auto_)) {}

  const ServerOptions& options() const { return options_; }
  // kAuto's learner (null for a fixed mode) and shadow's meter (null when
  // off): never destroyed.
  internal::AutoMethod* automatic() const { return auto_; }
  internal::ShadowMeter* shadow() const { return shadow_; }

  ::grpc::MessageHolder<Req, Resp>* AllocateMessages() override {
    internal::CallTiming timing;
    const double sync_bytes = internal::sync_request_bytes;
    return Allocate(sync_bytes >= 0 ? internal::CallKind::kSync
                                    : internal::CallKind::kCallback,
                    sync_bytes, &timing);
  }
  // An async call's messages (arenarpc/grpc/async.h): its trial, if any, in
  // `timing` (the clock started), for AsyncCall to time.
  ::grpc::MessageHolder<Req, Resp>* AllocateAsync(
      internal::CallTiming* timing) {
    return Allocate(internal::CallKind::kAsync, 0, timing);
  }

 private:
  ::grpc::MessageHolder<Req, Resp>* Allocate(internal::CallKind kind,
                                             double request_bytes,
                                             internal::CallTiming* timing) {
    const AllocationMode mode =
        internal::CallMode(options_.mode, auto_, kind, request_bytes, timing);
    internal::ShadowMeter* sampler =
        shadow_ != nullptr && shadow_->ShouldSample() ? shadow_ : nullptr;
    return internal::NewHolder<Req, Resp>(mode, sampler, timing);
  }

  const ServerOptions options_;
  internal::AutoMethod* const auto_;
  internal::ShadowMeter* const shadow_;
};

// The process-wide allocator of `mode` (after the kill switch).
template <class Req, class Resp>
::grpc::MessageAllocator<Req, Resp>* DefaultMessageAllocator(
    AllocationMode mode) {
  static_assert(std::is_base_of_v<google::protobuf::Message, Req> &&
                    std::is_base_of_v<google::protobuf::Message, Resp>,
                "arenarpc's allocators need full (non-lite) messages");
  switch (EffectiveAllocationMode(mode)) {
    case AllocationMode::kArena: {
      static auto* const a = new ArenaMessageAllocator<Req, Resp>();
      return a;
    }
    case AllocationMode::kReuse: {
      static auto* const a = new ReuseMessageAllocator<Req, Resp>();
      return a;
    }
    case AllocationMode::kAuto: {
      static auto* const a = new MeteredMessageAllocator<Req, Resp>(
          internal::TypePairName<Req, Resp>(),
          ServerOptions(AllocationMode::kAuto));
      return a;
    }
    case AllocationMode::kHeap:
      break;
  }
  static auto* const a = new HeapMessageAllocator<Req, Resp>();
  return a;
}

}  // namespace arenarpc

#endif  // ARENARPC_GRPC_ALLOCATORS_H_
