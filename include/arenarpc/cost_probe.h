// What parsing and destroying a message costs in each mode, measured on
// real bytes: heap (new, parse, delete), arena (a pooled ScopedArena,
// parse, release) and reuse (a warm MessagePool instance, parse, return).
// The measuring half of AllocationMode::kAuto; also usable offline.
//
//   arenarpc::CostProbe probe(&MyRequest::default_instance());
//   arenarpc::ModeCosts c = probe.Measure(wire);
//   double arena_ns = c.ns[int(arenarpc::AllocationMode::kArena)];
//
// Times are CPU time of the calling thread, the minimum over `rounds`
// interleaved rounds (the starting mode rotates from call to call, so no
// mode always runs on a cold cache). Small messages are parsed several
// times per timing so the clock's own cost does not count. Each mode is
// timed after one untimed pass of its own (kReuse: on the instance that
// pass warmed), so no mode pays for memory the one before gave back.
// Messages of 32 KiB and more are timed the way a glibc server parses them
// between calls: after the freed heap went back to the OS (malloc_trim),
// pooled arena pages and reused instances staying resident. At most one
// parsed copy is alive at a time and none between calls (a parsed message
// can be ten times its wire size; the probe runs beside a server).
//
// Thread safety: a CostProbe is used by one thread at a time.
// Lifetime: the prototype must outlive the probe.
#ifndef ARENARPC_COST_PROBE_H_
#define ARENARPC_COST_PROBE_H_

#include <google/protobuf/message.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "arenarpc/allocation_mode.h"
#include "arenarpc/message_pool.h"

namespace arenarpc {

struct ModeCosts {
  bool ok = false;  // false: the bytes did not parse
  std::array<double, kNumAllocationModes> ns = {};  // by AllocationMode
};

class CostProbe {
 public:
  explicit CostProbe(const google::protobuf::Message* prototype);
  CostProbe(const CostProbe&) = delete;
  CostProbe& operator=(const CostProbe&) = delete;

  // Times the modes of `modes` (bit i: AllocationMode i); the others' ns
  // stay 0.
  ModeCosts Measure(std::string_view wire, int rounds = 1,
                    unsigned modes = (1u << kNumAllocationModes) - 1);

 private:
  double Time(AllocationMode mode, std::string_view wire, int reps, bool* ok);
  double TimeAlone(AllocationMode mode, std::string_view wire, int reps,
                   bool* ok);

  const google::protobuf::Message* const prototype_;
  // kReuse's warm instance, alive while kReuse is timed only.
  std::optional<MessagePool<google::protobuf::Message>> pool_;
  uint32_t rotation_ = 0;
};

}  // namespace arenarpc

#endif  // ARENARPC_COST_PROBE_H_
