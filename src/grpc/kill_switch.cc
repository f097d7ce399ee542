#include "arenarpc/grpc/kill_switch.h"

#include <cstdlib>
#include <cstring>

namespace arenarpc {

bool ArenasDisabled() {
#ifdef ARENARPC_DISABLE_ARENAS
  return true;
#else
  static const bool disabled = [] {
    const char* v = std::getenv("ARENARPC_DISABLE_ARENAS");
    return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
  }();
  return disabled;
#endif
}

AllocationMode EffectiveAllocationMode(AllocationMode mode) {
  return ArenasDisabled() ? AllocationMode::kHeap : mode;
}

}  // namespace arenarpc
