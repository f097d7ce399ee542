// What parsing and destroying a message costs in each mode, measured on
// real bytes: heap (new, parse, delete), arena (a pooled ScopedArena,
// parse, release) and reuse (a warm MessagePool instance, parse, return).
// Shadow measurement's and arenarpc_advise's; also usable offline.
//
//   arenarpc::CostProbe probe(&MyRequest::default_instance());
//   arenarpc::ModeCosts c = probe.Measure(wire);
//   double arena_ns = c.ns[int(arenarpc::AllocationMode::kArena)];
//
// Times are the calling thread's CPU, the minimum over `rounds` rounds; how
// they are taken: docs/DESIGN_NOTES.md, "The cost probe".
//
// Thread safety: a CostProbe is used by one thread at a time.
// Lifetime: the prototype must outlive the probe.
#ifndef ARENARPC_COST_PROBE_H_
#define ARENARPC_COST_PROBE_H_

#include <google/protobuf/message.h>

#include <array>
#include <cstdint>
#include <string_view>

#include "arenarpc/allocation_mode.h"
#include "arenarpc/message_pool.h"  // kept: includers rely on it

namespace arenarpc {

struct ModeCosts {
  bool ok = false;  // false: the bytes did not parse
  std::array<double, kNumAllocationModes> ns = {};  // by AllocationMode
};

class CostProbe {
 public:
  explicit CostProbe(const google::protobuf::Message* prototype)
      : prototype_(prototype) {}
  CostProbe(const CostProbe&) = delete;
  CostProbe& operator=(const CostProbe&) = delete;

  ModeCosts Measure(std::string_view wire, int rounds = 1);

 private:
  const google::protobuf::Message* const prototype_;
  uint32_t rotation_ = 0;
};

}  // namespace arenarpc

#endif  // ARENARPC_COST_PROBE_H_
