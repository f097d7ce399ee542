// Sampling at random: true about once in `n` calls (n <= 1: always), from
// a per-thread xorshift, not every n-th call, so that callers alternating
// on one thread are sampled alike. No lock, no atomic.
#ifndef ARENARPC_SRC_INTERNAL_ONE_IN_H_
#define ARENARPC_SRC_INTERNAL_ONE_IN_H_

#include <cstdint>

namespace arenarpc::internal {

inline bool OneIn(uint32_t n) {
  static thread_local constinit uint64_t state = 0;
  if (n <= 1) return true;
  if (state == 0) {
    state = reinterpret_cast<uintptr_t>(&state) * 0x9E3779B97F4A7C15ull | 1;
  }
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return static_cast<uint32_t>(state >> 32) % n == 0;
}

}  // namespace arenarpc::internal

#endif  // ARENARPC_SRC_INTERNAL_ONE_IN_H_
