#include "arenarpc/grpc/stream.h"

#include <array>

#include "arenarpc/grpc/streaming.h"
#include "arenarpc/internal/check.h"
#include "arenarpc/internal/striped_counter.h"

namespace arenarpc {

struct internal::StreamGeneration {
  ScopedArena arena;
  uint64_t live = 0;  // messages alive on it, guarded by the owner's mu_
  bool used = false;  // a message was made on it
};

using internal::StreamGeneration;

namespace {

// Process-wide, striped because many streams count at once: every
// StreamArena's stats_ mirrored, and StreamMessages' (streaming.h). Never
// destroyed.
struct Totals {
  internal::StripedCounter streams, streams_created, messages, generations,
      live_messages, live_generations;
  struct {
    internal::StripedCounter streams, streams_opened, live_messages,
        arena_resets, arena_bytes, sampled;
    std::array<internal::StripedCounter, kNumAllocationModes> messages;
  } streamed;
};
Totals& GetTotals() {
  static Totals* const totals = new Totals();
  return *totals;
}

// One of a StreamArena's counters and its process-wide total.
void Count(uint64_t& stat, internal::StripedCounter& total, int64_t delta) {
  stat += delta;
  total.Add(delta);
}

}  // namespace

StreamArenaTotals GetStreamArenaTotals() {
  const Totals& t = GetTotals();
  return {.streams = t.streams.NonNegativeSum(),
          .streams_created = t.streams_created.NonNegativeSum(),
          .messages = t.messages.NonNegativeSum(),
          .generations = t.generations.NonNegativeSum(),
          .live_messages = t.live_messages.NonNegativeSum(),
          .live_generations = t.live_generations.NonNegativeSum()};
}

StreamArena::StreamArena(size_t recycle_bytes) : recycle_bytes_(recycle_bytes) {
  GetTotals().streams.Add(1);
  GetTotals().streams_created.Add(1);
}

StreamArena::~StreamArena() {
  internal::MutexLock lock(&mu_);
  ARENARPC_CHECK(stats_.live_messages == 0,
                 "StreamArena destroyed with live messages");
  if (current_ != nullptr) GetTotals().live_generations.Add(-1);
  GetTotals().streams.Add(-1);
  delete current_;
}

StreamGeneration* StreamArena::Acquire(ScopedArena** arena) {
  internal::MutexLock lock(&mu_);
  Totals& t = GetTotals();
  if (current_ != nullptr && current_->used) {
    if (current_->live == 0) {
      // Nothing alive on it: give its pages back, start clean.
      delete current_;
      current_ = nullptr;
      Count(stats_.live_generations, t.live_generations, -1);
    } else if (current_->arena.SpaceAllocated() >= recycle_bytes_) {
      current_ = nullptr;  // still in use: released by its last message
    }
  }
  if (current_ == nullptr) {
    current_ = new StreamGeneration();
    Count(stats_.generations, t.generations, 1);
    Count(stats_.live_generations, t.live_generations, 1);
  }
  current_->used = true;
  ++current_->live;
  Count(stats_.messages, t.messages, 1);
  Count(stats_.live_messages, t.live_messages, 1);
  *arena = &current_->arena;
  return current_;
}

void StreamArena::Unref(StreamGeneration* generation) {
  StreamGeneration* dead = nullptr;
  {
    internal::MutexLock lock(&mu_);
    Count(stats_.live_messages, GetTotals().live_messages, -1);
    if (--generation->live == 0 && generation != current_) {
      dead = generation;
      Count(stats_.live_generations, GetTotals().live_generations, -1);
    }
  }
  delete dead;  // outside the lock: runs message destructors
}

StreamArenaStats StreamArena::Stats() const {
  internal::MutexLock lock(&mu_);
  return stats_;
}

// --- StreamMessages (streaming.h) ---

namespace internal {

void RecordStreamOpen() {
  GetTotals().streamed.streams.Add(1);
  GetTotals().streamed.streams_opened.Add(1);
}
void RecordStreamClose() { GetTotals().streamed.streams.Add(-1); }
void RecordStreamMessage(AllocationMode mode) {
  GetTotals().streamed.messages[static_cast<int>(mode)].Add(1);
  GetTotals().streamed.live_messages.Add(1);
}
void RecordStreamRelease(AllocationMode mode, uint64_t arena_bytes,
                         bool sampled) {
  auto& t = GetTotals().streamed;
  t.live_messages.Add(-1);
  if (mode == AllocationMode::kArena) {
    t.arena_resets.Add(1);
    t.arena_bytes.Add(static_cast<int64_t>(arena_bytes));
  }
  if (sampled) t.sampled.Add(1);
}

}  // namespace internal

StreamTotals GetStreamTotals() {
  const auto& t = GetTotals().streamed;
  StreamTotals s{.streams = t.streams.NonNegativeSum(),
                 .streams_opened = t.streams_opened.NonNegativeSum(),
                 .live_messages = t.live_messages.NonNegativeSum(),
                 .arena_resets = t.arena_resets.NonNegativeSum(),
                 .arena_bytes = t.arena_bytes.NonNegativeSum(),
                 .sampled = t.sampled.NonNegativeSum()};
  for (int i = 0; i < kNumAllocationModes; ++i) {
    s.messages[i] = t.messages[i].NonNegativeSum();
  }
  return s;
}

}  // namespace arenarpc
