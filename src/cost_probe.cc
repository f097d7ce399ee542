#include "arenarpc/cost_probe.h"

#include <algorithm>
#include <memory>
#include <optional>

#include "arenarpc/arena.h"
#include "arenarpc/internal/cpu_clock.h"
#include "arenarpc/malloc_tuning.h"
#include "arenarpc/message_pool.h"

namespace arenarpc {
namespace {

using google::protobuf::Message;
using internal::TrimHeap;

constexpr double kMinTimedNs = 50e3;         // shorter: mostly the clock
constexpr size_t kColdWireBytes = 32 << 10;  // from here on a cold heap

double Time(const Message* prototype, MessagePool<Message>* pool,
            AllocationMode mode, std::string_view wire, int reps, bool* ok) {
  const auto parse = [&](Message* m) {
    *ok &= m->ParseFromArray(wire.data(), static_cast<int>(wire.size()));
  };
  const double start = internal::ThreadCpuNs();
  for (int i = 0; i < reps; ++i) {
    if (mode == AllocationMode::kHeap) {
      parse(std::unique_ptr<Message>(prototype->New()).get());
    } else if (mode == AllocationMode::kArena) {
      ScopedArena arena;
      Message* m = prototype->New(arena.arena());
      parse(m);
      if (arena.arena() == nullptr) delete m;  // arenas disabled
    } else {
      PooledMessage<Message> m = pool->Acquire();
      m.set_size_hint(wire.size());
      parse(m.get());
    }
  }
  return (internal::ThreadCpuNs() - start) / reps;
}

}  // namespace

ModeCosts CostProbe::Measure(std::string_view wire, int rounds) {
  ModeCosts c;
  c.ok = true;
  c.ns.fill(1e300);
  int reps = 1;  // a large message's one parse outlasts kMinTimedNs
  if (wire.size() < kColdWireBytes) {
    const double once =
        Time(prototype_, nullptr, AllocationMode::kArena, wire, 1, &c.ok);
    if (!c.ok) return c;
    reps = static_cast<int>(
        std::clamp(kMinTimedNs / std::max(once, 1.0), 1.0, 10000.0));
  }
  const uint32_t first = rotation_++;
  for (int r = 0; r < std::max(rounds, 1); ++r) {
    for (uint32_t k = 0; k < kNumAllocationModes; ++k) {
      const auto mode =
          static_cast<AllocationMode>((first + k) % kNumAllocationModes);
      std::optional<MessagePool<Message>> pool;  // none held between samples
      if (mode == AllocationMode::kReuse) pool.emplace(prototype_);
      MessagePool<Message>* const warm = pool ? &*pool : nullptr;
      // An untimed pass first: memory the previous mode gave back was
      // billed to this one. Large messages then on a cold heap, as a server
      // past M_TRIM_THRESHOLD faults them in on each call (docs/ADVISE.md).
      bool warm_ok = true;
      Time(prototype_, warm, mode, wire, 1, &warm_ok);
      if (wire.size() >= kColdWireBytes) TrimHeap();
      double& ns = c.ns[static_cast<int>(mode)];
      ns = std::min(ns, Time(prototype_, warm, mode, wire, reps, &c.ok));
    }
  }
  TrimHeap();  // not between modes: the next one paid for the regrowth
  return c;
}

}  // namespace arenarpc
