// TuneGlibcMalloc: the settings are applied (observed through glibc's own
// counters: mallinfo2's mapped blocks and heap size), refused values change
// nothing, repeated calls are fine, and a malloc that is not glibc's is
// refused. Run with ARENARPC_TEST_FOREIGN_MALLOC=<name> (and that allocator
// preloaded: tests/CMakeLists.txt) the refusal is what is checked; under a
// sanitizer (whose malloc is its own) likewise.
#include "arenarpc/malloc_tuning.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace arenarpc {
namespace {

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define ARENARPC_TEST_SANITIZER_MALLOC 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ARENARPC_TEST_SANITIZER_MALLOC 1
#endif

// The allocator this process is expected to use instead of glibc's, or ""
// when glibc's.
std::string ExpectedForeignMalloc() {
  if (const char* name = std::getenv("ARENARPC_TEST_FOREIGN_MALLOC")) {
    return name;
  }
#if defined(ARENARPC_TEST_SANITIZER_MALLOC)
  return "san";  // libasan.so / libtsan.so, or the executable (clang)
#else
  return "";
#endif
}

#if defined(__GLIBC__)
#if __GLIBC_PREREQ(2, 33)

constexpr size_t kBlock = size_t{8} << 20;  // far above glibc's 128 KiB

// Keeps the compiler from folding a malloc/free pair away.
void* volatile g_sink = nullptr;

void* AllocateTouched(size_t size) {
  void* p = std::malloc(size);
  if (p != nullptr) std::memset(p, 1, size);
  g_sink = p;
  return p;
}

// The behaviour tests need glibc's malloc in the process.
#define SKIP_WITHOUT_GLIBC_MALLOC()                                            \
  if (!ExpectedForeignMalloc().empty()) {                                      \
    GTEST_SKIP() << "malloc is not glibc's here: " << ExpectedForeignMalloc(); \
  }

TEST(MallocTuning, LargeBlocksComeFromTheHeapNotFromMmap) {
  SKIP_WITHOUT_GLIBC_MALLOC();
  ASSERT_TRUE(TuneGlibcMalloc().ok());
  const size_t mapped_before = mallinfo2().hblks;
  for (int i = 0; i < 3; ++i) {  // allocated, freed, allocated again
    void* p = AllocateTouched(kBlock);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(mallinfo2().hblks, mapped_before) << "round " << i;
    std::free(p);
  }
}

TEST(MallocTuning, FreedMemoryStaysWithTheProcess) {
  SKIP_WITHOUT_GLIBC_MALLOC();
  ASSERT_TRUE(TuneGlibcMalloc().ok());
  void* p = AllocateTouched(kBlock);
  ASSERT_NE(p, nullptr);
  const size_t heap_with_block = mallinfo2().arena;
  std::free(p);  // at the heap's top: glibc would trim it by default
  EXPECT_GE(mallinfo2().arena, heap_with_block);
}

TEST(MallocTuning, RefusesAnMmapThresholdAboveGlibcsMaximumChangingNothing) {
  SKIP_WITHOUT_GLIBC_MALLOC();
  ASSERT_TRUE(TuneGlibcMalloc().ok());
  GlibcMallocOptions too_large;
  // One above glibc's maximum (32 MiB on 64-bit), which glibc 2.35+ would
  // take without a word.
  too_large.mmap_threshold = size_t{4} * 1024 * 1024 * sizeof(long) + 1;
  too_large.trim_threshold = 0;  // would trim everything
  absl::Status s = TuneGlibcMalloc(too_large);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  // The earlier trim threshold is still in force.
  void* p = AllocateTouched(kBlock);
  ASSERT_NE(p, nullptr);
  const size_t heap_with_block = mallinfo2().arena;
  std::free(p);
  EXPECT_GE(mallinfo2().arena, heap_with_block);
}

TEST(MallocTuning, RefusesValuesMalloptCannotTake) {
  SKIP_WITHOUT_GLIBC_MALLOC();
  GlibcMallocOptions too_large;
  too_large.trim_threshold = size_t{4} << 30;  // above INT_MAX
  absl::Status s = TuneGlibcMalloc(too_large);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
}

TEST(MallocTuning, RepeatedCallsAreFine) {
  SKIP_WITHOUT_GLIBC_MALLOC();
  for (int i = 0; i < 3; ++i) {
    absl::Status s = TuneGlibcMalloc();
    EXPECT_TRUE(s.ok()) << "call " << i << ": " << s;
  }
  const size_t mapped_before = mallinfo2().hblks;
  void* p = AllocateTouched(kBlock);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(mallinfo2().hblks, mapped_before);
  std::free(p);
}

#endif  // glibc 2.33+
#endif  // __GLIBC__

TEST(MallocTuning, RefusesAMallocThatIsNotGlibcs) {
  [[maybe_unused]] const std::string foreign = ExpectedForeignMalloc();
  absl::Status s = TuneGlibcMalloc();
#if !defined(__GLIBC__)
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
#else
  if (foreign.empty()) {
    EXPECT_TRUE(s.ok()) << s;
  } else {
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
    // The message names what provides malloc (a library path, or the
    // executable for a sanitizer linked in statically).
    EXPECT_NE(std::string(s.message()).find("not glibc's"), std::string::npos)
        << s;
    if (foreign != "san") {
      EXPECT_NE(std::string(s.message()).find(foreign), std::string::npos) << s;
    }
  }
#endif
}

}  // namespace
}  // namespace arenarpc
