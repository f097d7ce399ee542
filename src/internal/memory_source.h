// Where the pools get memory from the OS: mmap/munmap, unless a test swaps
// in other functions to make the OS refuse (tests/fault_injection_test.cc).
//
//   void* p = arenarpc::internal::MapMemory(len);  // nullptr if refused
//   arenarpc::internal::UnmapMemory(p, len);
//   MemorySource old = SetMemorySourceForTesting({&FailingMap, &Unmap});
//
// Slow paths only (a load per batch). Thread-safe; a swapped-in source must
// be too, and unmap what the previous one mapped (wrap DefaultMemorySource()).
#ifndef ARENARPC_SRC_INTERNAL_MEMORY_SOURCE_H_
#define ARENARPC_SRC_INTERNAL_MEMORY_SOURCE_H_

#include <cstddef>

namespace arenarpc::internal {

struct MemorySource {
  void* (*map)(size_t len);  // zeroed, page-aligned memory or nullptr
  void (*unmap)(void* p, size_t len);
};

// mmap(MAP_PRIVATE | MAP_ANONYMOUS) and munmap.
MemorySource DefaultMemorySource();
// Test only: replaces the source of every pool; returns the previous one.
MemorySource SetMemorySourceForTesting(MemorySource source);

void* MapMemory(size_t len);
void UnmapMemory(void* p, size_t len);

}  // namespace arenarpc::internal

#endif  // ARENARPC_SRC_INTERNAL_MEMORY_SOURCE_H_
