#include "src/internal/memory_source.h"

#include <sys/mman.h>

#include <atomic>

namespace arenarpc::internal {
namespace {

void* Map(size_t len) {
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

void Unmap(void* p, size_t len) { munmap(p, len); }

// Constant-initialised: pools may map memory from static initialisers.
constinit std::atomic<void* (*)(size_t)> map_fn{&Map};
constinit std::atomic<void (*)(void*, size_t)> unmap_fn{&Unmap};

}  // namespace

MemorySource DefaultMemorySource() { return {&Map, &Unmap}; }

MemorySource SetMemorySourceForTesting(MemorySource source) {
  return {map_fn.exchange(source.map), unmap_fn.exchange(source.unmap)};
}

void* MapMemory(size_t len) {
  return map_fn.load(std::memory_order_acquire)(len);
}

void UnmapMemory(void* p, size_t len) {
  unmap_fn.load(std::memory_order_acquire)(p, len);
}

}  // namespace arenarpc::internal
