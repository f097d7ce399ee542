#include "arenarpc/grpc/stream.h"

#include <cstdio>
#include <cstdlib>

namespace arenarpc {
namespace internal {

struct StreamGeneration {
  ScopedArena arena;
  uint64_t live = 0;   // messages alive on it, guarded by the owner's mu_
  bool used = false;   // a message was made on it
};

}  // namespace internal

using internal::StreamGeneration;

StreamArena::StreamArena(size_t recycle_bytes) : recycle_bytes_(recycle_bytes) {}

StreamArena::~StreamArena() {
  internal::MutexLock lock(&mu_);
  if (stats_.live_messages != 0) {
    std::fprintf(stderr,
                 "arenarpc: StreamArena destroyed with %llu live messages\n",
                 static_cast<unsigned long long>(stats_.live_messages));
    std::abort();
  }
  delete current_;
}

StreamGeneration* StreamArena::Acquire() {
  internal::MutexLock lock(&mu_);
  if (current_ != nullptr && current_->used) {
    if (current_->live == 0) {
      // Nothing alive on it: give its pages back, start clean.
      delete current_;
      current_ = nullptr;
      --stats_.live_generations;
    } else if (current_->arena.SpaceAllocated() >= recycle_bytes_) {
      // Still in use: released by its last message (Unref).
      current_ = nullptr;
    }
  }
  if (current_ == nullptr) {
    current_ = new StreamGeneration();
    ++stats_.generations;
    ++stats_.live_generations;
  }
  current_->used = true;
  ++current_->live;
  ++stats_.messages;
  ++stats_.live_messages;
  return current_;
}

ScopedArena& StreamArena::ArenaOf(StreamGeneration* generation) {
  return generation->arena;
}

void StreamArena::Unref(StreamGeneration* generation) {
  StreamGeneration* dead = nullptr;
  {
    internal::MutexLock lock(&mu_);
    --stats_.live_messages;
    if (--generation->live == 0 && generation != current_) {
      dead = generation;
      --stats_.live_generations;
    }
  }
  delete dead;  // outside the lock: runs message destructors
}

StreamArena::Stats StreamArena::GetStats() const {
  internal::MutexLock lock(&mu_);
  return stats_;
}

}  // namespace arenarpc
