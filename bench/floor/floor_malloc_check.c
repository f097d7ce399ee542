// Run under LD_PRELOAD=libarenarpc_floor_malloc.so (the ctest does): every
// entry point the preloaded allocator replaces, from several threads.
// Exits 1 with a message on the first wrong answer.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                    \
  do {                                                                 \
    if (!(cond)) {                                                     \
      fprintf(stderr, "floor_malloc_check:%d: %s\n", __LINE__, #cond); \
      exit(1);                                                         \
    }                                                                  \
  } while (0)

enum { kThreads = 4, kBlocks = 20000 };

static void* worker(void* arg) {
  unsigned seed = (unsigned)(uintptr_t)arg;
  unsigned char* blocks[64];
  for (int i = 0; i < kBlocks; ++i) {
    size_t size = 1 + (size_t)(rand_r(&seed) % (i % 100 == 0 ? 200000 : 300));
    unsigned char* p = malloc(size);
    CHECK(p && (uintptr_t)p % 16 == 0);
    memset(p, (int)(seed & 0xff), size);
    p[0] = (unsigned char)i;
    blocks[i % 64] = p;
    if (i % 64 == 63) {  // the last 64 blocks still hold what was written
      for (int j = 0; j < 64; ++j)
        CHECK(blocks[j][0] == (unsigned char)(i - 63 + j));
      for (int j = 0; j < 64; ++j) free(blocks[j]);
    }
  }
  return NULL;
}

int main(void) {
  size_t (*used)(void) =
      (size_t(*)(void))dlsym(RTLD_DEFAULT, "floor_malloc_used_bytes");
  if (!used) {
    fprintf(stderr, "floor_malloc_check: floor_malloc is not preloaded\n");
    return 1;
  }
  char* s = malloc(100);
  CHECK(s && malloc_usable_size(s) >= 100);
  strcpy(s, "kept across realloc");
  s = realloc(s, 100000);
  CHECK(s && strcmp(s, "kept across realloc") == 0 &&
        malloc_usable_size(s) >= 100000);
  free(s);
  char* volatile first = malloc(1000);
  first[0] = 1;
  free(first);
  char* volatile second = malloc(1000);
  CHECK(second != first);  // freed memory is never handed out again
  size_t before = used();
  CHECK(malloc(1 << 20) &&
        used() > before);  // large blocks come from the region
  unsigned char* z = calloc(1000, 1000);
  CHECK(z);
  for (int i = 0; i < 1000 * 1000; ++i) CHECK(z[i] == 0);
  volatile size_t huge = SIZE_MAX / 2;  // not known to the compiler: no warning
  CHECK(calloc(huge, 4) == NULL);
  void* a = NULL;
  CHECK(posix_memalign(&a, 4096, 10) == 0 && (uintptr_t)a % 4096 == 0);
  CHECK(posix_memalign(&a, 3, 10) != 0);
  CHECK((uintptr_t)memalign(64, 1) % 64 == 0);
  void* big = aligned_alloc(1 << 16, 300000);
  CHECK(big && (uintptr_t)big % (1 << 16) == 0 &&
        malloc_usable_size(big) >= 300000);
  memset(big, 1, 300000);
  CHECK((uintptr_t)valloc(1) % 4096 == 0);
  pthread_t threads[kThreads];
  for (int t = 0; t < kThreads; ++t)
    CHECK(pthread_create(&threads[t], NULL, worker,
                         (void*)(uintptr_t)(t + 1)) == 0);
  for (int t = 0; t < kThreads; ++t) CHECK(pthread_join(threads[t], NULL) == 0);
  printf("floor_malloc_check: OK, %zu MiB used\n", used() >> 20);
  return 0;
}
