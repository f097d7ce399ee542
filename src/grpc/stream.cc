#include "arenarpc/grpc/stream.h"

#include <array>
#include <cstdio>
#include <cstdlib>

#include "arenarpc/grpc/streaming.h"
#include "arenarpc/internal/striped_counter.h"

namespace arenarpc {
namespace internal {

struct StreamGeneration {
  ScopedArena arena;
  uint64_t live = 0;  // messages alive on it, guarded by the owner's mu_
  bool used = false;  // a message was made on it
};

}  // namespace internal

using internal::StreamGeneration;

namespace {

// Process-wide mirror of every StreamArena's stats_: striped, because many
// streams make messages at once.
struct Totals {
  internal::StripedCounter streams;
  internal::StripedCounter streams_created;
  internal::StripedCounter messages;
  internal::StripedCounter generations;
  internal::StripedCounter live_messages;
  internal::StripedCounter live_generations;
};

Totals& GetTotals() {
  static Totals* const totals = new Totals();  // outlives all streams
  return *totals;
}

uint64_t Read(const internal::StripedCounter& c) {
  const int64_t v = c.Sum();
  return v < 0 ? 0 : static_cast<uint64_t>(v);  // torn read under load
}

}  // namespace

StreamArenaTotals GetStreamArenaTotals() {
  const Totals& t = GetTotals();
  StreamArenaTotals s;
  s.streams = Read(t.streams);
  s.streams_created = Read(t.streams_created);
  s.messages = Read(t.messages);
  s.generations = Read(t.generations);
  s.live_messages = Read(t.live_messages);
  s.live_generations = Read(t.live_generations);
  return s;
}

StreamArena::StreamArena(size_t recycle_bytes) : recycle_bytes_(recycle_bytes) {
  GetTotals().streams.Add(1);
  GetTotals().streams_created.Add(1);
}

StreamArena::~StreamArena() {
  internal::MutexLock lock(&mu_);
  if (stats_.live_messages != 0) {
    std::fprintf(stderr,
                 "arenarpc: StreamArena destroyed with %llu live messages\n",
                 static_cast<unsigned long long>(stats_.live_messages));
    std::abort();
  }
  if (current_ != nullptr) GetTotals().live_generations.Add(-1);
  GetTotals().streams.Add(-1);
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
      GetTotals().live_generations.Add(-1);
    } else if (current_->arena.SpaceAllocated() >= recycle_bytes_) {
      // Still in use: released by its last message (Unref).
      current_ = nullptr;
    }
  }
  if (current_ == nullptr) {
    current_ = new StreamGeneration();
    ++stats_.generations;
    ++stats_.live_generations;
    GetTotals().generations.Add(1);
    GetTotals().live_generations.Add(1);
  }
  current_->used = true;
  ++current_->live;
  ++stats_.messages;
  ++stats_.live_messages;
  GetTotals().messages.Add(1);
  GetTotals().live_messages.Add(1);
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
    GetTotals().live_messages.Add(-1);
    if (--generation->live == 0 && generation != current_) {
      dead = generation;
      --stats_.live_generations;
      GetTotals().live_generations.Add(-1);
    }
  }
  delete dead;  // outside the lock: runs message destructors
}

StreamArenaStats StreamArena::Stats() const {
  internal::MutexLock lock(&mu_);
  return stats_;
}

// --- StreamMessages (streaming.h) ---

namespace {

struct MessagesTotals {
  internal::StripedCounter streams;
  internal::StripedCounter streams_opened;
  std::array<internal::StripedCounter, kNumAllocationModes> messages;
  internal::StripedCounter live_messages;
  internal::StripedCounter arena_resets;
  internal::StripedCounter arena_bytes;
  internal::StripedCounter sampled;
};

MessagesTotals& GetMessagesTotals() {
  static MessagesTotals* const totals = new MessagesTotals();  // never dies
  return *totals;
}

}  // namespace

namespace internal {

void RecordStreamOpen() {
  GetMessagesTotals().streams.Add(1);
  GetMessagesTotals().streams_opened.Add(1);
}
void RecordStreamClose() { GetMessagesTotals().streams.Add(-1); }
void RecordStreamMessage(AllocationMode mode) {
  GetMessagesTotals().messages[static_cast<int>(mode)].Add(1);
  GetMessagesTotals().live_messages.Add(1);
}
void RecordStreamRelease(AllocationMode mode, uint64_t arena_bytes,
                         bool sampled) {
  MessagesTotals& t = GetMessagesTotals();
  t.live_messages.Add(-1);
  if (mode == AllocationMode::kArena) {
    t.arena_resets.Add(1);
    t.arena_bytes.Add(static_cast<int64_t>(arena_bytes));
  }
  if (sampled) t.sampled.Add(1);
}

}  // namespace internal

StreamTotals GetStreamTotals() {
  const MessagesTotals& t = GetMessagesTotals();
  StreamTotals s;
  s.streams = Read(t.streams);
  s.streams_opened = Read(t.streams_opened);
  for (int i = 0; i < kNumAllocationModes; ++i) {
    s.messages[i] = Read(t.messages[i]);
  }
  s.live_messages = Read(t.live_messages);
  s.arena_resets = Read(t.arena_resets);
  s.arena_bytes = Read(t.arena_bytes);
  s.sampled = Read(t.sampled);
  return s;
}

}  // namespace arenarpc
