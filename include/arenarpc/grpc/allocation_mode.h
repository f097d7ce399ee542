// Deprecated: renamed arenarpc/grpc/kill_switch.h (it holds the kill
// switch, not the modes: those are arenarpc/allocation_mode.h). This
// forwarding header is removed in the next release; include
// "arenarpc/grpc/kill_switch.h" instead.
//
//   #include "arenarpc/grpc/kill_switch.h"   // was grpc/allocation_mode.h
//
// Thread safety and lifetime: see arenarpc/grpc/kill_switch.h.
#ifndef ARENARPC_GRPC_ALLOCATION_MODE_H_
#define ARENARPC_GRPC_ALLOCATION_MODE_H_

#include "arenarpc/grpc/kill_switch.h"

#endif  // ARENARPC_GRPC_ALLOCATION_MODE_H_
