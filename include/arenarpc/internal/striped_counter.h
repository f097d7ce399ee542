// A counter that many threads update without sharing a cache line.
//
//   StripedCounter in_use;
//   in_use.Add(1);           // ~ an uncontended relaxed fetch_add
//   int64_t n = in_use.Sum();  // exact once writers are quiet
//
// Each thread adds to one of kStripes cache-line-sized cells (chosen once
// per thread, round robin); Sum() adds the cells. Thread-safe.
#ifndef ARENARPC_INTERNAL_STRIPED_COUNTER_H_
#define ARENARPC_INTERNAL_STRIPED_COUNTER_H_

#include <atomic>
#include <cstdint>

namespace arenarpc::internal {

class StripedCounter {
 public:
  void Add(int64_t delta) {
    cells_[Stripe()].value.fetch_add(delta, std::memory_order_relaxed);
  }
  int64_t Sum() const {
    int64_t sum = 0;
    for (const Cell& c : cells_) sum += c.value.load(std::memory_order_relaxed);
    return sum;
  }
  // Sum() read under load may be torn below zero: 0 then.
  uint64_t NonNegativeSum() const {
    const int64_t sum = Sum();
    return sum < 0 ? 0 : static_cast<uint64_t>(sum);
  }

 private:
  static constexpr int kStripes = 16;
  struct alignas(64) Cell {
    std::atomic<int64_t> value{0};
  };
  static int Stripe() {
    if (__builtin_expect(stripe_ < 0, 0)) {
      static std::atomic<int> next{0};
      stripe_ = next.fetch_add(1, std::memory_order_relaxed) % kStripes;
    }
    return stripe_;
  }
  static inline thread_local constinit int stripe_ = -1;

  Cell cells_[kStripes];
};

}  // namespace arenarpc::internal

#endif  // ARENARPC_INTERNAL_STRIPED_COUNTER_H_
