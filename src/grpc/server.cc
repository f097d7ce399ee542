#include "arenarpc/grpc/server.h"

#include <cstdlib>
#include <cstring>

#include <string>

namespace arenarpc {

absl::StatusOr<AllocationMode> ParseAllocationMode(std::string_view name) {
  if (name == "heap") return AllocationMode::kHeap;
  if (name == "arena") return AllocationMode::kArena;
  if (name == "reuse") return AllocationMode::kReuse;
  return absl::InvalidArgumentError("unknown allocation mode \"" +
                                    std::string(name) +
                                    "\" (heap, arena or reuse)");
}

std::string_view AllocationModeName(AllocationMode mode) {
  switch (mode) {
    case AllocationMode::kHeap:
      return "heap";
    case AllocationMode::kArena:
      return "arena";
    case AllocationMode::kReuse:
      return "reuse";
  }
  return "unknown";
}

bool ArenasDisabled() {
#ifdef ARENARPC_DISABLE_ARENAS
  return true;
#else
  // Read once: the mode of an installed allocator must not change later.
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
