// Assertions and sanitizer hooks shared by arenarpc's pools.
//
//   ARENARPC_CHECK(page != nullptr, "PagePool: out of memory");  // always on
//   ARENARPC_DCHECK(owned, "PagePool::Deallocate: page is not from this pool");
//   ARENARPC_POISON(p, n);  ARENARPC_UNPOISON(p, n);  // no-ops without ASan
//
// ARENARPC_DEBUG_CHECKS: on unless NDEBUG, or as defined (0 or 1). The
// messages name the API misused: what went wrong, not where.
#ifndef ARENARPC_INTERNAL_CHECK_H_
#define ARENARPC_INTERNAL_CHECK_H_

#if !defined(ARENARPC_DEBUG_CHECKS) && defined(NDEBUG)
#define ARENARPC_DEBUG_CHECKS 0
#elif !defined(ARENARPC_DEBUG_CHECKS)
#define ARENARPC_DEBUG_CHECKS 1
#endif

#include "absl/base/config.h"

#ifdef ABSL_HAVE_ADDRESS_SANITIZER
#define ARENARPC_ASAN 1
#include <sanitizer/asan_interface.h>
#include <sanitizer/lsan_interface.h>
// LeakSanitizer does not scan mmap'd pages, so heap blocks referenced only
// from a page would be leaks: pages are registered while mapped.
#define ARENARPC_LSAN_ROOT(p, n) __lsan_register_root_region((p), (n))
#define ARENARPC_LSAN_UNROOT(p, n) __lsan_unregister_root_region((p), (n))
#define ARENARPC_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define ARENARPC_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#define ARENARPC_IS_POISONED(p) (__asan_address_is_poisoned(p) != 0)
#else
#define ARENARPC_LSAN_ROOT(p, n) ((void)(p), (void)(n))
#define ARENARPC_LSAN_UNROOT(p, n) ((void)(p), (void)(n))
#define ARENARPC_POISON(p, n) ((void)(p), (void)(n))
#define ARENARPC_UNPOISON(p, n) ((void)(p), (void)(n))
#define ARENARPC_IS_POISONED(p) ((void)(p), false)
#endif

namespace arenarpc::internal {
[[noreturn]] void CheckFailed(const char* file, int line, const char* message);
}  // namespace arenarpc::internal

#define ARENARPC_CHECK(cond, message)                                   \
  do {                                                                  \
    if (__builtin_expect(!(cond), 0)) {                                 \
      ::arenarpc::internal::CheckFailed(__FILE__, __LINE__, (message)); \
    }                                                                   \
  } while (0)

#if ARENARPC_DEBUG_CHECKS
#define ARENARPC_DCHECK(cond, message) ARENARPC_CHECK(cond, message)
#else
#define ARENARPC_DCHECK(cond, message) ((void)0)
#endif

#endif  // ARENARPC_INTERNAL_CHECK_H_
