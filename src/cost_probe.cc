#include "arenarpc/cost_probe.h"

#include <time.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <memory>

#include "arenarpc/arena.h"
#include "arenarpc/internal/cpu_clock.h"

namespace arenarpc {
namespace {

using internal::ThreadCpuNs;

// A timing shorter than this is dominated by the clock itself.
constexpr double kMinTimedNs = 50e3;
// Messages this large are timed on a cold heap (TimeAlone).
constexpr size_t kColdWireBytes = 32 << 10;

}  // namespace

CostProbe::CostProbe(const google::protobuf::Message* prototype)
    : prototype_(prototype) {}

double CostProbe::Time(AllocationMode mode, std::string_view wire, int reps,
                       bool* ok) {
  const char* data = wire.data();
  const int size = static_cast<int>(wire.size());
  const double start = ThreadCpuNs();
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
        PooledMessage<google::protobuf::Message> m = pool_->Acquire();
        m.set_size_hint(wire.size());
        *ok &= m->ParseFromArray(data, size);
        break;
      }
    }
  }
  return (ThreadCpuNs() - start) / reps;
}

// At most one parsed copy is alive at a time: the probe runs beside a
// server, and a parsed message can be ten times its wire size. Each mode
// gets one untimed pass first, as a server's steady state would: memory the
// previous mode gave back (to glibc's top, to the page pool) would otherwise
// be billed to whichever mode comes next (up to 5x on a 14 KB message).
double CostProbe::TimeAlone(AllocationMode mode, std::string_view wire,
                            int reps, bool* ok) {
  if (mode == AllocationMode::kReuse) pool_.emplace(prototype_);
  bool warm_ok = true;
  Time(mode, wire, 1, &warm_ok);  // untimed
#ifdef __GLIBC__
  // A server between calls of large messages: glibc has given the freed
  // heap back to the OS (free() trims once the top exceeds
  // M_TRIM_THRESHOLD, 128 KiB; a parsed message is several times its wire
  // size), so each call faults its heap memory in again, while pooled
  // arena pages and a reused instance stay resident. Without this the
  // probe saw a warm heap and predicted about half the saving measured
  // end to end on OTLP (docs/ADVISE.md). Small messages stay warm, as in a
  // server.
  if (wire.size() >= kColdWireBytes) malloc_trim(0);
#endif
  const double ns = Time(mode, wire, reps, ok);
  pool_.reset();  // nothing held between samples
  return ns;
}

ModeCosts CostProbe::Measure(std::string_view wire, int rounds,
                             unsigned modes) {
  ModeCosts c;
  c.ok = true;
  c.ns.fill(1e300);
  // Repetitions so that one timing lasts at least kMinTimedNs. A large
  // message takes longer than that to parse once: no parse to find out.
  int reps = 1;
  if (wire.size() < kColdWireBytes) {
    const double once = Time(AllocationMode::kArena, wire, 1, &c.ok);
    if (!c.ok) return c;
    reps = static_cast<int>(
        std::clamp(kMinTimedNs / std::max(once, 1.0), 1.0, 10000.0));
  }
  const uint32_t first = rotation_++;
  for (int r = 0; r < std::max(rounds, 1); ++r) {
    for (int k = 0; k < kNumAllocationModes; ++k) {
      const auto m =
          static_cast<AllocationMode>((first + k) % kNumAllocationModes);
      if ((modes & (1u << static_cast<int>(m))) == 0) continue;
      c.ns[static_cast<int>(m)] =
          std::min(c.ns[static_cast<int>(m)], TimeAlone(m, wire, reps, &c.ok));
    }
  }
#ifdef __GLIBC__
  // glibc keeps the freed heap copies resident; give them back once, after
  // the timings (trimming between modes made the next mode pay for the
  // heap's regrowth).
  malloc_trim(0);
#endif
  for (int m = 0; m < kNumAllocationModes; ++m) {
    if ((modes & (1u << m)) == 0) c.ns[m] = 0;
  }
  return c;
}

}  // namespace arenarpc
