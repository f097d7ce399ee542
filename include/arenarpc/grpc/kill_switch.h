// The kill switch: every allocation mode becomes kHeap, arenarpc out of the
// request path, without a rebuild of the service.
//
//   arenarpc::AllocationMode m =
//       arenarpc::EffectiveAllocationMode(arenarpc::AllocationMode::kArena);
//   // kHeap if the switch is on, else kArena.
//
// On when arenarpc is built with ARENARPC_DISABLE_ARENAS, or when the
// environment variable ARENARPC_DISABLE_ARENAS is set to anything but "" or
// "0": read once per process, so an installed mode never changes. Every
// install and DefaultMessageAllocator() apply it. Thread-safe.
#ifndef ARENARPC_GRPC_KILL_SWITCH_H_
#define ARENARPC_GRPC_KILL_SWITCH_H_

#include "arenarpc/allocation_mode.h"

namespace arenarpc {

// `mode` after the kill switch.
AllocationMode EffectiveAllocationMode(AllocationMode mode);
// True if the kill switch is on (build option or environment).
bool ArenasDisabled();

}  // namespace arenarpc

#endif  // ARENARPC_GRPC_KILL_SWITCH_H_
