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
// What it does. glibc hands every block of more than 128 KiB (its default
// M_MMAP_THRESHOLD, which it raises by itself to the size of a mapped block
// freed, up to 32 MiB) out of freshly mapped memory and unmaps it on free,
// and gives the top of a heap back to the OS once more than 128 KiB (or
// twice the raised threshold) of it is free (M_TRIM_THRESHOLD). A gRPC
// client receiving large responses (gRPC 1.51 has no hook to give it an
// allocator) then gets fresh pages from the kernel for its receive buffers
// call after call: page faults and page clearing under the copy of the
// received bytes were a large share of the client's CPU per call in the
// corpus (docs/MEASURE.md, "Clients"). TuneGlibcMalloc applies, with
// mallopt,
//   M_MMAP_THRESHOLD = options.mmap_threshold  (default 32 MiB: blocks up
//                      to it come from the heap and are reused after free)
//   M_TRIM_THRESHOLD = options.trim_threshold  (default 256 MiB: free memory
//                      at a heap's top is kept up to it)
// the same as GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:
// glibc.malloc.trim_threshold=268435456 in the environment, but from code.
// Setting either also turns off glibc's own raising of the thresholds.
//
// What it costs: memory. Freed heap memory stays with the process (up to
// trim_threshold at the top of each of glibc's arenas: the main one and up
// to 8 per core for threads), and blocks up to mmap_threshold share the
// heap with small ones, so a long-lived small block can pin a large freed
// range. malloc_trim(0) gives back what is free (the servers' idle
// trimming, arenarpc/grpc/server_options.h IdleTrimOptions, calls it). The
// client's peak RSS with and without it, measured: docs/MEASURE.md, "Clients".
//
// Clients gain the most (large responses: gRPC's receive buffers); servers
// much less (BENCHMARKS 0d: a server's arenarpc mode already keeps its
// messages on pooled pages). It is process-wide, so it is a function of
// the process, not an option of a call or a server.
//
// Errors (nothing is changed when one is returned):
//  - Unimplemented: not built against glibc.
//  - FailedPrecondition: malloc in this process is not glibc's (a preloaded
//    or linked jemalloc, tcmalloc, mimalloc, a sanitizer's), found by
//    comparing the malloc the process resolves with the one in glibc's
//    libc.so; the message names the library that provides it. That
//    allocator does not use glibc's settings (and most already keep freed
//    memory). A statically linked binary (no libc.so to compare with) is
//    refused the same way, since which malloc it links cannot be told.
//  - InvalidArgument: an mmap_threshold above glibc's maximum (32 MiB on
//    64-bit, 16 MiB on 32-bit: the range of glibc.malloc.mmap_threshold;
//    glibc before 2.35 refuses more in mallopt too, later ones take it but
//    such blocks no longer fit a thread arena's heap), a trim_threshold
//    above INT_MAX (mallopt takes an int), or a value mallopt refuses.
//  - Internal: glibc refused M_TRIM_THRESHOLD after accepting the mmap
//    threshold (glibc 2.36 accepts any value; the mmap one stays set).
//
// Repeated calls are fine: each applies its values (the last call wins,
// as with mallopt; the same values again change nothing). GLIBC_TUNABLES
// in the environment is overridden by a successful call.
//
// Thread safety: may be called from any thread; calls are serialized.
// glibc reads the thresholds without a lock, so threads allocating at the
// same time see the new values from their next allocation on. Call it at
// the start of main, before threads and large allocations: blocks mapped
// before it stay mapped until freed.
#ifndef ARENARPC_MALLOC_TUNING_H_
#define ARENARPC_MALLOC_TUNING_H_

#include <cstddef>

#include "absl/status/status.h"

namespace arenarpc {

struct GlibcMallocOptions {
  // Blocks up to this size come from the heap (M_MMAP_THRESHOLD). At most
  // 32 MiB on 64-bit (16 MiB on 32-bit).
  size_t mmap_threshold = size_t{32} << 20;
  // Free memory at a heap's top kept before giving it back
  // (M_TRIM_THRESHOLD).
  size_t trim_threshold = size_t{256} << 20;
};

// Applies `options` to glibc's malloc (see above). OK, or an error with
// nothing changed.
absl::Status TuneGlibcMalloc(const GlibcMallocOptions& options = {});

}  // namespace arenarpc

#endif  // ARENARPC_MALLOC_TUNING_H_
