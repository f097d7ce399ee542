// arenarpc's version, the same as the CMake package's (arenarpc_VERSION
// after find_package; CMakeLists.txt refuses to configure when they
// differ).
//
//   #include "arenarpc/version.h"
//   static_assert(ARENARPC_VERSION_MAJOR == 0 && ARENARPC_VERSION_MINOR >= 2);
//   const char* version = arenarpc::kVersion;  // "0.2.0"
#ifndef ARENARPC_VERSION_H_
#define ARENARPC_VERSION_H_

#define ARENARPC_VERSION_MAJOR 0
#define ARENARPC_VERSION_MINOR 2
#define ARENARPC_VERSION_PATCH 0
#define ARENARPC_VERSION_STRING "0.2.0"

namespace arenarpc {

inline constexpr char kVersion[] = ARENARPC_VERSION_STRING;

}  // namespace arenarpc

#endif  // ARENARPC_VERSION_H_
