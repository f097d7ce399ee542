// The corpus server's memory trace (--memory_trace_ms): one line per period
// with the process's RSS next to what each part of arenarpc holds and what
// kAuto's learner is doing, so a peak can be explained (auto's
// peak RSS against the mode it settles on; docs/DESIGN_NOTES.md, "Memory
// while learning").
//
//   arenarpc::corpus::StartMemoryTrace(50, "/tmp/trace.txt");
//
// Columns (the file's first line names them): seconds since the start,
// VmRSS / VmHWM / RssAnon (KiB), threads; glibc's mallinfo2 summed over its
// arenas: bytes taken from the system by sbrk/heaps (sys), in use, free,
// mmapped chunks (KiB); PagePool::Default(): bytes held (KiB), pages in use,
// cached (thread caches and depot), in the depot; pooled idle arenas; the
// gRPC message pools' idle instances and their retained bytes (KiB); calls
// completed per mode (heap arena reuse); per kAuto method that learned:
// the mode its calls run in, settled (1/0), samples, modes dropped.
//
// Thread safety: call once. Lifetime: the thread runs until the process
// exits.
#ifndef ARENARPC_BENCH_CORPUS_MEMORY_TRACE_H_
#define ARENARPC_BENCH_CORPUS_MEMORY_TRACE_H_

#include <string>

namespace arenarpc::corpus {

// False if `path` cannot be opened for writing.
bool StartMemoryTrace(int period_ms, const std::string& path);

}  // namespace arenarpc::corpus

#endif  // ARENARPC_BENCH_CORPUS_MEMORY_TRACE_H_
