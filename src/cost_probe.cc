#include "arenarpc/cost_probe.h"

#include <time.h>

#include <algorithm>
#include <memory>

#include "arenarpc/arena.h"

namespace arenarpc {
namespace {

double CpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// A timing shorter than this is dominated by the clock itself.
constexpr double kMinTimedNs = 50e3;

}  // namespace

CostProbe::CostProbe(const google::protobuf::Message* prototype)
    : prototype_(prototype), pool_(prototype) {}

double CostProbe::Time(AllocationMode mode, std::string_view wire, int reps,
                       bool* ok) {
  const char* data = wire.data();
  const int size = static_cast<int>(wire.size());
  const double start = CpuNs();
  for (int i = 0; i < reps; ++i) {
    switch (mode) {
      case AllocationMode::kHeap: {
        std::unique_ptr<google::protobuf::Message> m(prototype_->New());
        *ok &= m->ParseFromArray(data, size);
        break;
      }
      case AllocationMode::kArena: {
        ScopedArena arena;
        google::protobuf::Message* m = prototype_->New(arena.arena());
        *ok &= m->ParseFromArray(data, size);
        if (arena.arena() == nullptr) delete m;  // arenas disabled
        break;
      }
      default: {
        PooledMessage<google::protobuf::Message> m = pool_.Acquire();
        m.set_size_hint(wire.size());
        *ok &= m->ParseFromArray(data, size);
        break;
      }
    }
  }
  return (CpuNs() - start) / reps;
}

ModeCosts CostProbe::Measure(std::string_view wire, int rounds) {
  ModeCosts c;
  c.ok = true;
  c.ns.fill(1e300);
  // Repetitions so that one timing lasts at least kMinTimedNs.
  const double once = Time(AllocationMode::kArena, wire, 1, &c.ok);
  if (!c.ok) return c;
  const int reps = static_cast<int>(std::clamp(kMinTimedNs / std::max(once, 1.0), 1.0, 10000.0));
  const uint32_t first = rotation_++;
  for (int r = 0; r < std::max(rounds, 1); ++r) {
    for (int k = 0; k < kNumAllocationModes; ++k) {
      const int m = static_cast<int>((first + k) % kNumAllocationModes);
      c.ns[m] = std::min(c.ns[m], Time(static_cast<AllocationMode>(m), wire, reps, &c.ok));
    }
  }
  return c;
}

}  // namespace arenarpc
