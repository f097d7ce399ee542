// Assertions and sanitizer hooks shared by arenarpc's pools.
//
//   ARENARPC_CHECK(page != nullptr, "PagePool: out of memory");  // always on
//   ARENARPC_DCHECK(owned, "PagePool::Deallocate: page is not from this pool");
//   ARENARPC_POISON(p, n);  ARENARPC_UNPOISON(p, n);  // no-ops without ASan
//
// ARENARPC_DEBUG_CHECKS defaults to on when NDEBUG is not defined; define it
// to 0 or 1 to override. The messages name the API that was misused, so a
// crash report says what went wrong rather than where.
#ifndef ARENARPC_INTERNAL_CHECK_H_
#define ARENARPC_INTERNAL_CHECK_H_

#ifndef ARENARPC_DEBUG_CHECKS
#ifdef NDEBUG
#define ARENARPC_DEBUG_CHECKS 0
#else
#define ARENARPC_DEBUG_CHECKS 1
#endif
#endif

#if defined(__SANITIZE_ADDRESS__)
#define ARENARPC_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ARENARPC_ASAN 1
#endif
#endif

#ifdef ARENARPC_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/lsan_interface.h>
// Pages come from mmap, which LeakSanitizer does not scan: heap blocks
// referenced only from a page (a string of a message kept on a pooled
// arena) would be reported as leaks. Pages are registered while mapped.
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
