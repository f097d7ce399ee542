// Counts operator new calls (and bytes) of the calling thread: the
// `alloc_objects` / `alloc_space` view of a heap profile, for one parse.
//
//   arenarpc::advise::AllocCount before = arenarpc::advise::ThreadAllocCount();
//   ...parse and destroy a heap message...
//   arenarpc::advise::AllocCount n = ThreadAllocCount() - before;
//
// alloc_count.cc replaces the global operator new/delete (all forms) of any
// program that links it, forwarding to malloc/free; referring to
// ThreadAllocCount() is what pulls it in from the static library. Counting
// is always on: one thread-local increment per allocation.
//
// Thread safety: each thread reads its own counters.
#ifndef ARENARPC_TOOLS_ADVISE_ALLOC_COUNT_H_
#define ARENARPC_TOOLS_ADVISE_ALLOC_COUNT_H_

#include <cstdint>

namespace arenarpc::advise {

struct AllocCount {
  uint64_t objects = 0;
  uint64_t bytes = 0;
  AllocCount operator-(const AllocCount& o) const {
    return {objects - o.objects, bytes - o.bytes};
  }
};

// Allocations made by the calling thread since it started.
AllocCount ThreadAllocCount();

}  // namespace arenarpc::advise

#endif  // ARENARPC_TOOLS_ADVISE_ALLOC_COUNT_H_
