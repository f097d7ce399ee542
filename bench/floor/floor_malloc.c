// floor_malloc: a malloc that never frees, preloaded into a program to
// measure what it costs with the allocator's work taken away (README.md).
//
//   FLOOR_MALLOC_PREFAULT_MIB=2048 LD_PRELOAD=libarenarpc_floor_malloc.so prog
//
// One region is reserved at the first call (FLOOR_MALLOC_LIMIT_MIB, default
// 8192) and its first FLOOR_MALLOC_PREFAULT_MIB are made resident at once,
// so that a measured window after start-up takes no page faults either: a
// block then costs a pointer bump. Each thread bumps through its own 1 MiB
// chunk; larger blocks come straight from the region. free() does nothing,
// so memory only grows: past the limit the program aborts. At exit one line
// on stderr says how much was used ("floor_malloc: used ...").
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define EXPORT __attribute__((visibility("default")))

enum { kAlign = 16, kHeader = 16 };
static const size_t kMiB = (size_t)1 << 20;
static const size_t kChunk = (size_t)1 << 20;  // a thread's share of the region
static const size_t kDirect = (size_t)64
                              << 10;  // blocks from this size skip the chunk

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static char* region;
static size_t region_size;
static size_t prefaulted;
static _Atomic size_t region_used;

// initial-exec: no TLS allocation (which would call malloc) on first use.
static __thread char* chunk_cur __attribute__((tls_model("initial-exec")));
static __thread char* chunk_end __attribute__((tls_model("initial-exec")));

static size_t env_mib(const char* name, size_t fallback) {
  const char* v = getenv(name);  // getenv and strtoull do not allocate
  return v && *v ? (size_t)strtoull(v, NULL, 10) : fallback;
}

static void die(const char* msg) {
  ssize_t ignored = write(2, msg, strlen(msg));
  (void)ignored;
  abort();
}

static void init(void) {
  region_size = env_mib("FLOOR_MALLOC_LIMIT_MIB", 8192) * kMiB;
  region = mmap(NULL, region_size, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (region == MAP_FAILED) die("floor_malloc: cannot reserve the region\n");
  prefaulted = env_mib("FLOOR_MALLOC_PREFAULT_MIB", 0) * kMiB;
  if (prefaulted > region_size) prefaulted = region_size;
  if (prefaulted && madvise(region, prefaulted, MADV_POPULATE_WRITE) != 0) {
    long page = sysconf(_SC_PAGESIZE);  // kernels before 5.14: touch each page
    for (size_t i = 0; i < prefaulted; i += (size_t)page) region[i] = 0;
  }
}

// `size` bytes from the region, 16-aligned (every size asked is).
static char* carve(size_t size) {
  pthread_once(&init_once, init);
  size_t off =
      atomic_fetch_add_explicit(&region_used, size, memory_order_relaxed);
  if (off > region_size || region_size - off < size)
    die("floor_malloc: FLOOR_MALLOC_LIMIT_MIB reached (memory only grows: "
        "shorten the run)\n");
  return region + off;
}

// A block of `size` usable bytes aligned to `align` (a power of two), its
// usable size stored in the 16 bytes before it. Fresh memory is zero: the
// region is never written twice.
static void* bump(size_t size, size_t align) {
  size_t extra = align > kAlign ? align : 0;
  if (size > SIZE_MAX / 2) return NULL;
  size_t need = (size + kHeader + extra + kAlign - 1) & ~(size_t)(kAlign - 1);
  char* raw;
  if ((size_t)(chunk_end - chunk_cur) >= need) {
    raw = chunk_cur;
    chunk_cur += need;
  } else if (need >= kDirect) {
    raw = carve(need);
  } else {
    chunk_cur = carve(kChunk);
    chunk_end = chunk_cur + kChunk;
    raw = chunk_cur;
    chunk_cur += need;
  }
  uintptr_t mask = extra ? align - 1 : 0;
  uintptr_t user = ((uintptr_t)raw + kHeader + mask) & ~mask;
  ((size_t*)user)[-2] = (uintptr_t)raw + need - user;
  return (void*)user;
}

static size_t usable(const void* p) { return ((const size_t*)p)[-2]; }

EXPORT void* malloc(size_t size) {
  void* p = bump(size, kAlign);
  if (!p) errno = ENOMEM;
  return p;
}

EXPORT void free(void* p) { (void)p; }

EXPORT void cfree(void* p) { (void)p; }

EXPORT void* calloc(size_t n, size_t size) {
  if (size && n > SIZE_MAX / size) {
    errno = ENOMEM;
    return NULL;
  }
  return malloc(n * size);  // never-used memory: already zero
}

EXPORT void* realloc(void* p, size_t size) {
  if (!p) return malloc(size);
  if (size == 0) return NULL;  // glibc's: frees p (here: nothing to do)
  if (size <= usable(p)) return p;
  void* q = malloc(size);
  if (q) memcpy(q, p, usable(p));
  return q;
}

EXPORT void* reallocarray(void* p, size_t n, size_t size) {
  if (size && n > SIZE_MAX / size) {
    errno = ENOMEM;
    return NULL;
  }
  return realloc(p, n * size);
}

static int power_of_two(size_t a) { return a && !(a & (a - 1)); }

EXPORT int posix_memalign(void** out, size_t align, size_t size) {
  if (!power_of_two(align) || align % sizeof(void*)) return EINVAL;
  void* p = bump(size, align);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}

EXPORT void* memalign(size_t align, size_t size) {
  while (!power_of_two(align))
    align = (align | (align - 1)) + 1;  // glibc rounds up too
  void* p = bump(size, align);
  if (!p) errno = ENOMEM;
  return p;
}

EXPORT void* aligned_alloc(size_t align, size_t size) {
  if (!power_of_two(align)) {
    errno = EINVAL;
    return NULL;
  }
  return memalign(align, size);
}

EXPORT void* valloc(size_t size) {
  return memalign((size_t)sysconf(_SC_PAGESIZE), size);
}

EXPORT void* pvalloc(size_t size) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  return memalign(page, (size + page - 1) & ~(page - 1));
}

EXPORT size_t malloc_usable_size(void* p) { return p ? usable(p) : 0; }

// For the check program and the runner: bytes taken from the region so far.
EXPORT size_t floor_malloc_used_bytes(void) {
  return atomic_load_explicit(&region_used, memory_order_relaxed);
}

__attribute__((destructor)) static void report(void) {
  if (!region) return;
  size_t used = floor_malloc_used_bytes();
  char line[160];
  int n = snprintf(
      line, sizeof line,
      "floor_malloc: used %zu MiB of %zu MiB (limit), %zu MiB prefaulted%s\n",
      used / kMiB, region_size / kMiB, prefaulted / kMiB,
      used > prefaulted ? " (past the prefaulted part: page faults counted)"
                        : "");
  if (n > 0) {
    ssize_t ignored = write(2, line, (size_t)n);
    (void)ignored;
  }
}
