// Makes the OS refuse 1 in N of the pools' mappings, for tests
// (src/internal/memory_source.h). Counts what is mapped, so a test can check
// that a pool gave everything back.
//
//   arenarpc::test::MapFaults faults(/*fail_one_in=*/3);  // armed until ~
//   ...
//   EXPECT_GT(arenarpc::test::MapFaults::failures(), 0u);
#ifndef ARENARPC_TESTS_FAULT_INJECTION_H_
#define ARENARPC_TESTS_FAULT_INJECTION_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "src/internal/memory_source.h"

namespace arenarpc::test {

class MapFaults {
 public:
  // fail_one_in: 1 fails every mapping, N every N-th, 0 none (counting only).
  explicit MapFaults(uint64_t fail_one_in) {
    one_in_.store(fail_one_in);
    previous_ = internal::SetMemorySourceForTesting({&Map, &Unmap});
  }
  ~MapFaults() { internal::SetMemorySourceForTesting(previous_); }
  MapFaults(const MapFaults&) = delete;
  MapFaults& operator=(const MapFaults&) = delete;

  void set_fail_one_in(uint64_t n) { one_in_.store(n); }
  static uint64_t failures() { return failures_.load(); }
  // Bytes mapped through this source and not unmapped yet (may go below
  // zero when a pool unmaps what it mapped before the source was set).
  static int64_t mapped_bytes() { return mapped_.load(); }

 private:
  static void* Map(size_t len) {
    const uint64_t n = one_in_.load(std::memory_order_relaxed);
    if (n != 0 && calls_.fetch_add(1, std::memory_order_relaxed) % n == 0) {
      failures_.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
    void* p = internal::DefaultMemorySource().map(len);
    if (p != nullptr) mapped_.fetch_add(static_cast<int64_t>(len));
    return p;
  }
  static void Unmap(void* p, size_t len) {
    mapped_.fetch_sub(static_cast<int64_t>(len));
    internal::DefaultMemorySource().unmap(p, len);
  }

  static inline std::atomic<uint64_t> one_in_{0};
  static inline std::atomic<uint64_t> calls_{0};
  static inline std::atomic<uint64_t> failures_{0};
  static inline std::atomic<int64_t> mapped_{0};
  internal::MemorySource previous_;
};

}  // namespace arenarpc::test

#endif  // ARENARPC_TESTS_FAULT_INJECTION_H_
