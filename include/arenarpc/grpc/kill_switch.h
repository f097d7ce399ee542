// The kill switch: every allocation mode becomes kHeap, arenarpc out of the
// request path, without a rebuild of the service.
//
//   arenarpc::AllocationMode m =
//       arenarpc::EffectiveAllocationMode(arenarpc::AllocationMode::kArena);
//   // kHeap if the switch is on, else kArena.
//
// The switch is on when arenarpc is built with ARENARPC_DISABLE_ARENAS, or
// when the environment variable ARENARPC_DISABLE_ARENAS is set to anything
// but "" or "0" when it is first read. Every install applies it
// (arenarpc/grpc/install.h), and so does DefaultMessageAllocator().
//
// Thread safety: plain functions, callable from any thread.
// Lifetime: the environment is read once per process; the answer never
// changes afterwards (an installed allocator's mode must not change).
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
