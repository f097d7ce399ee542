// Shared by the corpus's service files: the deterministic generator, the
// request-mix schedule, checksum helpers and each service's entry.
#ifndef ARENARPC_BENCH_CORPUS_CORPUS_INTERNAL_H_
#define ARENARPC_BENCH_CORPUS_CORPUS_INTERNAL_H_

#include <google/protobuf/message.h>

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "corpus.h"

namespace arenarpc::corpus::internal {

// splitmix64: tiny, fast and the same on every platform (std:: engines and
// distributions are not specified bit-for-bit across standard libraries).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi] (inclusive).
  int64_t Uniform(int64_t lo, int64_t hi) {
    return lo +
           static_cast<int64_t>(Next() % static_cast<uint64_t>(hi - lo + 1));
  }
  // Skewed towards lo: uniform in log space, for sizes with long tails.
  int64_t LogUniform(int64_t lo, int64_t hi);
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  bool Chance(double p) { return Unit() < p; }
  template <class T, size_t N>
  const T& Pick(const std::array<T, N>& items) {
    return items[Next() % N];
  }

  std::string Hex(int n);     // n lowercase hex digits
  std::string Bytes(int n);   // n random bytes (ids, binary payloads)
  std::string Words(int n);   // ~n bytes of English-like text
  std::string Digits(int n);  // n decimal digits
  std::string Json(int n);    // ~n bytes of a flat JSON event object

 private:
  uint64_t state_;
};

// Concatenates strings, string_views and integers. (Debian's Abseil is
// built with its own string_view, which absl::StrCat does not take from
// std::string_view.)
inline void AppendPiece(std::string* s, std::string_view v) { s->append(v); }
inline void AppendPiece(std::string* s, const char* v) { s->append(v); }
template <class T>
requires std::is_integral_v<T>
void AppendPiece(std::string* s, T v) { s->append(std::to_string(v)); }
template <class... T>
std::string Cat(const T&... parts) {
  std::string s;
  (AppendPiece(&s, parts), ...);
  return s;
}

// Mixes v into h (order-dependent), for checksums.
inline uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}
// FNV-1a: handlers hash short strings (keys, names) to look them up.
inline uint64_t HashStr(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}
// Large values (payloads, bodies): a handler forwards or stores them
// without reading every byte; size and the first byte stand for that.
inline uint64_t Touch(std::string_view s) {
  return s.size() * 31 + (s.empty() ? 0 : static_cast<unsigned char>(s[0]));
}

// A map<string, string>, independent of the map's iteration order (which
// depends on a per-process hash seed): keys hashed, short values hashed,
// long ones touched.
template <class Map>
uint64_t WalkStringMap(const Map& map) {
  uint64_t sum = map.size();
  for (const auto& [key, value] : map) {
    sum +=
        Mix(HashStr(key), value.size() <= 64 ? HashStr(value) : Touch(value));
  }
  return sum;
}

// One kind of request in a service's mix and its share per 100 requests.
struct Share {
  int kind;
  int per_100;
};

// The mix schedule (corpus.h): request i gets the kind at its slot in a
// seed-dependent shuffle of block i / 100, and its own Rng, so requests
// do not depend on count. `make` fills a request of the kind.
std::vector<std::string> GenerateMix(
    uint64_t seed, int count, std::initializer_list<Share> shares,
    void (*make)(int kind, Rng& rng, google::protobuf::Message* request),
    const google::protobuf::Message& prototype);

// A Prometheus remote-write batch (kube-prometheus series, 2000 samples per
// full batch) as HoraeDB's storage.WriteRequest; service_cortex.cc sends
// the same series in Prometheus' own layout.
enum RemoteWriteKind { kFullBatch, kDeadlineFlush };
inline constexpr std::initializer_list<Share> kRemoteWriteMix = {
    {kFullBatch, 80}, {kDeadlineFlush, 20}};
void MakeRemoteWriteBatch(int kind, Rng& rng, google::protobuf::Message* m);

// Each service file's entry (in Services() order).
Service HealthService();
Service OtlpTraceService();
Service OtlpMetricsService();
Service OtlpLogsService();
Service PubsubService();
Service LoggingService();
Service EtcdService();
Service EtcdRangeService();
Service HoraedbService();
Service CortexService();

}  // namespace arenarpc::corpus::internal

#endif  // ARENARPC_BENCH_CORPUS_CORPUS_INTERNAL_H_
