// The allocation modes as the gRPC adapters apply them: the kill switch.
//
//   arenarpc::AllocationMode m =
//       arenarpc::EffectiveAllocationMode(arenarpc::AllocationMode::kArena);
//   // kHeap if arenas are disabled, else kArena.
//
// Kill switch: when arenarpc is built with ARENARPC_DISABLE_ARENAS, or the
// environment variable ARENARPC_DISABLE_ARENAS is set to anything but "" or
// "0" when it is first read, every mode becomes kHeap (the operational
// "take arenarpc out of the request path" switch).
//
// Thread safety: plain functions, callable from any thread.
// Lifetime: the environment is read once per process; the answer never
// changes afterwards (an installed allocator's mode must not change).
#ifndef ARENARPC_GRPC_ALLOCATION_MODE_H_
#define ARENARPC_GRPC_ALLOCATION_MODE_H_

#include "arenarpc/allocation_mode.h"

namespace arenarpc {

// `mode` after the kill switch.
AllocationMode EffectiveAllocationMode(AllocationMode mode);
// True if the kill switch is on (build option or environment).
bool ArenasDisabled();

}  // namespace arenarpc

#endif  // ARENARPC_GRPC_ALLOCATION_MODE_H_
