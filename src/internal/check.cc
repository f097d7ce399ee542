#include "arenarpc/internal/check.h"

#include <cstdio>
#include <cstdlib>

namespace arenarpc::internal {

void CheckFailed(const char* file, int line, const char* message) {
  std::fprintf(stderr, "arenarpc check failed at %s:%d: %s\n", file, line,
               message);
  std::fflush(stderr);
  std::abort();
}

}  // namespace arenarpc::internal
