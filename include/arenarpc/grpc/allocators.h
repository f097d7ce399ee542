// The allocation modes on gRPC: grpc::MessageAllocators that give each
// unary call its request and response as heap objects, on pooled arenas,
// reused from pools, or as kAuto picks. An install (arenarpc/grpc/install.h)
// chooses among them from ServerOptions (arenarpc/grpc/server_options.h);
// use them directly only where gRPC takes an allocator and no install
// applies. Why it works this way: docs/DESIGN.md, "gRPC: the server
// allocators".
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
// Modes (what a call's request and response are made of):
//  - kHeap: plain heap objects, as gRPC does without an allocator (counted).
//  - kArena: each on a pooled ScopedArena owned by the call; the arenas go
//    back to the pool when the call is released (callback API: after the
//    reactor's OnDone; sync API: once the response is sent).
//  - kReuse: borrowed from process-wide MessagePool<T>s (DefaultMessagePool,
//    one per message type) and returned cleared, the pool's guards applied.
//  - kAuto: per method, one of the three above, picked by measuring the
//    method's own calls: a few are served in each mode and timed where they
//    run (sync and callback calls; async ones with arenarpc/grpc/async.h's
//    lines); starts on kArena. Choices and costs: GetGrpcStats().auto_methods
//    and the Prometheus text (arenarpc/grpc/server_options.h, AutoOptions).
// Over ServerOptions::max_pooled_bytes, kArena and kReuse (and kAuto's
// picks) serve heap messages instead. The kill switch
// (arenarpc/grpc/kill_switch.h) turns every mode into kHeap.
// FreeRequest(): kHeap destroys the request, kArena releases the request's
// arena, kReuse returns the request to its pool. The handler must not touch
// the request afterwards (gRPC's own default holder ignores FreeRequest;
// ours do not).
//
// Thread safety: allocators are thread-safe (gRPC calls them concurrently);
// a call's holder is used by one call at a time, as gRPC guarantees.
// Lifetime: DefaultMessageAllocator()'s allocators and DefaultMessagePool()'s
// pools are process-wide and never destroyed (gRPC requires allocators to
// outlive the server). An install of kAuto, or with shadow measurement on,
// makes one MeteredMessageAllocator per method and mode, also never
// destroyed (install once per service, not once per call; installing the
// same method and mode again reuses the first install's allocator, and is
// refused if it asks for other options). An allocator you make yourself
// must outlive the server.
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
}  // namespace internal

// kReuse's pool of T, one per process (see "Lifetime" above); its stats
// and trimming are registered on first use.
template <class T>
MessagePool<T>& DefaultMessagePool() {
  static MessagePool<T>* const pool = [] {
    auto* p = new MessagePool<T>();
    internal::RegisterMessagePool(internal::MessageTypeName<T>(),
                                  /*used_by_grpc=*/true, p,
                                  [p] { return p->Stats(); });
    internal::RegisterMessagePoolTrim(
        [](void* q, std::chrono::milliseconds idle_for) {
          static_cast<MessagePool<T>*>(q)->Trim();
          static_cast<MessagePool<T>*>(q)->ReleaseIdleCaches(idle_for);
        },
        p);
    return p;
  }();
  return *pool;
}

namespace internal {
// kAuto: gives back the idle instances of a method's kReuse pools once it
// stops running calls in reuse (src/grpc/auto_method.cc).
template <class Req, class Resp>
void TrimDefaultMessagePools() {
  DefaultMessagePool<Req>().Trim();
  DefaultMessagePool<Req>().ReleaseIdleCaches(std::chrono::milliseconds(0));
  DefaultMessagePool<Resp>().Trim();
  DefaultMessagePool<Resp>().ReleaseIdleCaches(std::chrono::milliseconds(0));
}
}  // namespace internal

// kHeap (see "Modes" above).
template <class Req, class Resp>
class HeapMessageAllocator final : public ::grpc::MessageAllocator<Req, Resp> {
 public:
  ::grpc::MessageHolder<Req, Resp>* AllocateMessages() override {
    internal::RecordAllocate(AllocationMode::kHeap);
    return new internal::HeapHolder<Req, Resp>(nullptr);
  }
};

// kArena (see "Modes" above).
template <class Req, class Resp>
class ArenaMessageAllocator final : public ::grpc::MessageAllocator<Req, Resp> {
 public:
  ::grpc::MessageHolder<Req, Resp>* AllocateMessages() override {
    if (internal::OverPooledCap()) {
      internal::RecordAllocate(AllocationMode::kHeap);
      return new internal::HeapHolder<Req, Resp>(nullptr);
    }
    internal::RecordAllocate(AllocationMode::kArena);
    return new internal::ArenaHolder<Req, Resp>(nullptr);
  }
};

// kReuse (see "Modes" above).
template <class Req, class Resp>
class ReuseMessageAllocator final : public ::grpc::MessageAllocator<Req, Resp> {
 public:
  // Pools must outlive the allocator; by default the shared ones.
  ReuseMessageAllocator(
      MessagePool<Req>* requests = &DefaultMessagePool<Req>(),
      MessagePool<Resp>* responses = &DefaultMessagePool<Resp>())
      : requests_(requests), responses_(responses) {}

  ::grpc::MessageHolder<Req, Resp>* AllocateMessages() override {
    if (internal::OverPooledCap()) {
      internal::RecordAllocate(AllocationMode::kHeap);
      return new internal::HeapHolder<Req, Resp>(nullptr);
    }
    internal::RecordAllocate(AllocationMode::kReuse);
    return new internal::ReuseHolder<Req, Resp>(requests_->Acquire(),
                                                responses_->Acquire(), nullptr);
  }

 private:
  MessagePool<Req>* const requests_;
  MessagePool<Resp>* const responses_;
};

// kAuto, or any mode with shadow measurement, per method: each call in the
// method's mode (kAuto: the learner's, or a trial), a sampled few measured
// off the request path (shadow).
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
  // kAuto's learner and trials (null for a fixed mode): never destroyed.
  internal::AutoMethod* automatic() const { return auto_; }

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
    AllocationMode mode = options_.mode;
    // Over the cap no trial is handed out: every call is a heap one.
    if ((auto_ != nullptr || mode != AllocationMode::kHeap) &&
        internal::OverPooledCap()) {
      mode = AllocationMode::kHeap;
    } else if (auto_ != nullptr) {
      mode = auto_->ModeForCall(kind, request_bytes, timing);
    }
    internal::ShadowMeter* sampler =
        shadow_ != nullptr && shadow_->ShouldSample() ? shadow_ : nullptr;
    internal::RecordAllocate(mode);
    switch (mode) {
      case AllocationMode::kArena:
        return new internal::ArenaHolder<Req, Resp>(sampler, *timing);
      case AllocationMode::kReuse: {
        PooledMessage<Req> request = DefaultMessagePool<Req>().Acquire();
        PooledMessage<Resp> response = DefaultMessagePool<Resp>().Acquire();
        timing->warming = request.new_instance() || response.new_instance();
        return new internal::ReuseHolder<Req, Resp>(
            std::move(request), std::move(response), sampler, *timing);
      }
      default:
        return new internal::HeapHolder<Req, Resp>(sampler, *timing);
    }
  }

  const ServerOptions options_;
  internal::AutoMethod* const auto_;
  internal::ShadowMeter* const shadow_;
};

// The process-wide allocator of `mode` (after the kill switch) for
// Req/Resp (see "Lifetime" above).
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
