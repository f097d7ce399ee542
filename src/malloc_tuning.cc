#include "arenarpc/malloc_tuning.h"

#include <climits>
#include <mutex>

#include "absl/strings/str_cat.h"

#if defined(__GLIBC__)
#include <dlfcn.h>
#include <gnu/lib-names.h>  // LIBC_SO
#include <malloc.h>
#endif

namespace arenarpc {

#if defined(__GLIBC__)
namespace {

// glibc's DEFAULT_MMAP_THRESHOLD_MAX: mallopt refused more before 2.35;
// later ones take it, but such blocks no longer fit a thread arena's heap.
constexpr size_t kMaxMmapThreshold = size_t{4} * 1024 * 1024 * sizeof(long);

// OK when the `malloc` the dynamic linker resolves for everyone is the one
// in libc.so (another allocator, preloaded, linked or a sanitizer's, wins).
absl::Status CheckMallocIsGlibcs() {
  void* libc = dlopen(LIBC_SO, RTLD_NOW | RTLD_NOLOAD);
  void* glibc_malloc = libc != nullptr ? dlsym(libc, "malloc") : nullptr;
  if (libc != nullptr) dlclose(libc);
  void* used_malloc = dlsym(RTLD_DEFAULT, "malloc");
  if (glibc_malloc == nullptr || used_malloc == nullptr) {
    return absl::FailedPreconditionError(
        "TuneGlibcMalloc: " LIBC_SO
        " or malloc not found (a static binary?), "
        "so whose malloc runs cannot be told; nothing changed");
  }
  if (used_malloc != glibc_malloc) {
    Dl_info info{};
    const char* provider = dladdr(used_malloc, &info) != 0 && info.dli_fname
                               ? info.dli_fname
                               : "an unknown object";
    return absl::FailedPreconditionError(absl::StrCat(
        "TuneGlibcMalloc: malloc in this process is not glibc's but ", provider,
        "'s (preloaded, linked or a sanitizer's); it does not use glibc's "
        "settings, nothing changed"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status TuneGlibcMalloc(const GlibcMallocOptions& options) {
  if (options.mmap_threshold > kMaxMmapThreshold) {
    return absl::InvalidArgumentError(
        absl::StrCat("TuneGlibcMalloc: mmap_threshold ", options.mmap_threshold,
                     " is above glibc's maximum ", kMaxMmapThreshold,
                     " (its tunable's range); nothing changed"));
  }
  if (options.trim_threshold > static_cast<size_t>(INT_MAX)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TuneGlibcMalloc: trim_threshold ", options.trim_threshold,
        " is above INT_MAX (mallopt takes an int); nothing changed"));
  }
  absl::Status glibc = CheckMallocIsGlibcs();
  if (!glibc.ok()) return glibc;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  // First the one glibc may refuse: a refusal then changes nothing.
  if (mallopt(M_MMAP_THRESHOLD, static_cast<int>(options.mmap_threshold)) !=
      1) {
    return absl::InvalidArgumentError(
        absl::StrCat("TuneGlibcMalloc: glibc refused M_MMAP_THRESHOLD ",
                     options.mmap_threshold, "; nothing changed"));
  }
  if (mallopt(M_TRIM_THRESHOLD, static_cast<int>(options.trim_threshold)) !=
      1) {
    return absl::InternalError(absl::StrCat(
        "TuneGlibcMalloc: glibc refused M_TRIM_THRESHOLD ",
        options.trim_threshold, " after accepting M_MMAP_THRESHOLD ",
        options.mmap_threshold));
  }
  return absl::OkStatus();
}

#else  // !__GLIBC__

absl::Status TuneGlibcMalloc(const GlibcMallocOptions&) {
  return absl::UnimplementedError(
      "TuneGlibcMalloc: not built against glibc; nothing changed");
}

#endif

void internal::TrimHeap() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace arenarpc
