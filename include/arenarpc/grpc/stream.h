// Pooled arenas, recycled between messages, for the messages a stream's
// reactor passes to StartRead()/StartWrite() (gRPC has no allocator hook):
//
//   class EchoStreamReactor : public grpc::ServerBidiReactor<Req, Resp> {
//     void Next() {
//       request_ = arena_.Create<Req>();   // the old one is released
//       StartRead(request_.get());
//     }
//     void OnReadDone(bool ok) override {
//       if (!ok) return Finish(grpc::Status::OK);
//       response_ = arena_.Create<Resp>();
//       Fill(*request_, response_.get());
//       request_.reset();
//       StartWrite(response_.get());       // valid until OnWriteDone
//     }
//     void OnWriteDone(bool ok) override {
//       response_.reset();
//       ok ? Next() : Finish(grpc::Status::OK);
//     }
//     void OnDone() override { delete this; }  // handles before arena_
//     arenarpc::StreamArena arena_;
//     arenarpc::StreamMessage<Req> request_;   // declared after arena_
//     arenarpc::StreamMessage<Resp> response_;
//   };
//
// Messages are made on the current "generation", a pooled ScopedArena,
// replaced when it has no live message or (messages overlapping) holds
// `recycle_bytes`: memory is bounded by the messages alive at once.
//
// Thread safety: Create() and dropping StreamMessages may happen concurrently
// (a bidi reactor's OnReadDone and OnWriteDone can run on two threads); a
// StreamMessage itself is not thread-safe.
// Lifetime: every StreamMessage must be destroyed before its StreamArena
// (checked in every build: the destructor aborts); a message lives until
// its StreamMessage is destroyed or reset.
#ifndef ARENARPC_GRPC_STREAM_H_
#define ARENARPC_GRPC_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "arenarpc/arena.h"
#include "arenarpc/internal/mutex.h"

namespace arenarpc {

class StreamArena;

namespace internal {
struct StreamGeneration;
}  // namespace internal

// A message made by a StreamArena; releases its hold on the arena when
// destroyed or reset. Move-only.
template <class T>
class StreamMessage {
 public:
  StreamMessage() = default;
  StreamMessage(StreamMessage&& o) noexcept { *this = std::move(o); }
  StreamMessage& operator=(StreamMessage&& o) noexcept {
    if (this != &o) {
      reset();
      owner_ = std::exchange(o.owner_, nullptr);
      generation_ = std::exchange(o.generation_, nullptr);
      message_ = std::exchange(o.message_, nullptr);
    }
    return *this;
  }
  ~StreamMessage() { reset(); }

  T* get() const { return message_; }
  T* operator->() const { return message_; }
  T& operator*() const { return *message_; }
  explicit operator bool() const { return message_ != nullptr; }
  void reset();

 private:
  friend class StreamArena;
  StreamMessage(StreamArena* owner, internal::StreamGeneration* generation,
                T* message)
      : owner_(owner), generation_(generation), message_(message) {}

  StreamArena* owner_ = nullptr;
  internal::StreamGeneration* generation_ = nullptr;
  T* message_ = nullptr;
};

struct StreamArenaStats {
  uint64_t messages = 0;     // made so far
  uint64_t generations = 0;  // arenas used so far
  uint64_t live_messages = 0;
  uint64_t live_generations = 0;
};

class StreamArena {
 public:
  explicit StreamArena(size_t recycle_bytes = size_t{256} << 10);
  ~StreamArena();
  StreamArena(const StreamArena&) = delete;
  StreamArena& operator=(const StreamArena&) = delete;

  // Creates a T on the current generation, as ScopedArena::Create does.
  template <class T, class... Args>
  StreamMessage<T> Create(Args&&... args);

  StreamArenaStats Stats() const;

 private:
  template <class T>
  friend class StreamMessage;
  // The generation to make a message on (rotated if needed), with its
  // count taken, and its arena.
  internal::StreamGeneration* Acquire(ScopedArena** arena)
      ABSL_LOCKS_EXCLUDED(mu_);
  void Unref(internal::StreamGeneration* generation) ABSL_LOCKS_EXCLUDED(mu_);

  const size_t recycle_bytes_;
  mutable internal::Mutex mu_;
  internal::StreamGeneration* current_ ABSL_GUARDED_BY(mu_) = nullptr;
  StreamArenaStats stats_ ABSL_GUARDED_BY(mu_);
};

// Every StreamArena of the process summed (arenarpc_grpc_stream_*), read
// without stopping the streams.
struct StreamArenaTotals {
  uint64_t streams = 0;          // StreamArenas alive now
  uint64_t streams_created = 0;  // constructed so far
  uint64_t messages = 0;         // made so far
  uint64_t generations = 0;      // arenas used so far
  uint64_t live_messages = 0;
  uint64_t live_generations = 0;
};
StreamArenaTotals GetStreamArenaTotals();

template <class T, class... Args>
StreamMessage<T> StreamArena::Create(Args&&... args) {
  ScopedArena* arena = nullptr;
  internal::StreamGeneration* g = Acquire(&arena);
  // ScopedArena::Create is thread-safe; our count keeps the generation.
  return StreamMessage<T>(
      this, g, arena->template Create<T>(std::forward<Args>(args)...));
}

template <class T>
void StreamMessage<T>::reset() {
  if (generation_ != nullptr) owner_->Unref(generation_);
  owner_ = nullptr;
  generation_ = nullptr;
  message_ = nullptr;
}

}  // namespace arenarpc

#endif  // ARENARPC_GRPC_STREAM_H_
