// Telling glibc's malloc to keep the memory it frees (opt-in, process-wide).
//
//   #include "arenarpc/malloc_tuning.h"
//
//   int main(int argc, char** argv) {
//     // First thing, before the first large allocation:
//     absl::Status s = arenarpc::TuneGlibcMalloc();   // 32 MiB / 256 MiB
//     if (!s.ok()) LOG(WARNING) << s;   // not glibc's malloc: nothing done
//     ...
//   }
//
// It sets M_MMAP_THRESHOLD and M_TRIM_THRESHOLD with mallopt; it costs
// memory: docs/DESIGN_NOTES.md, "Tuning glibc's malloc".
//
// Errors (nothing is changed when one is returned):
//  - Unimplemented: not built against glibc;
//  - FailedPrecondition: malloc in this process is not glibc's (a preloaded
//    or linked allocator, a sanitizer's; the message names it), or it
//    cannot be told (statically linked);
//  - InvalidArgument: mmap_threshold above glibc's maximum (32 MiB on
//    64-bit), trim_threshold above INT_MAX, or a value mallopt refuses;
//  - Internal: glibc refused M_TRIM_THRESHOLD after accepting the other.
//
// Thread safety: calls are serialized; the last one wins. Call it first in
// main: blocks mapped before it stay mapped until freed.
#ifndef ARENARPC_MALLOC_TUNING_H_
#define ARENARPC_MALLOC_TUNING_H_

#include <cstddef>

#include "absl/status/status.h"

namespace arenarpc {

struct GlibcMallocOptions {
  size_t mmap_threshold = size_t{32} << 20;   // blocks up to it: the heap
  size_t trim_threshold = size_t{256} << 20;  // free heap top kept up to it
};

// Applies `options` to glibc's malloc (see above).
absl::Status TuneGlibcMalloc(const GlibcMallocOptions& options = {});

namespace internal {
// glibc: malloc_trim(0), its free heap memory back to the OS. Else nothing.
void TrimHeap();
}  // namespace internal

}  // namespace arenarpc

#endif  // ARENARPC_MALLOC_TUNING_H_
