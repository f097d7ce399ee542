#include "corpus.h"

#include <google/protobuf/arena.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <cmath>

#include "corpus_internal.h"

namespace arenarpc::corpus {
namespace internal {

int64_t Rng::LogUniform(int64_t lo, int64_t hi) {
  const double l = std::log(static_cast<double>(lo));
  const double h = std::log(static_cast<double>(hi) + 1);
  const int64_t v = static_cast<int64_t>(std::exp(l + (h - l) * Unit()));
  return std::clamp(v, lo, hi);
}

std::string Rng::Hex(int n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s(n, '0');
  for (char& c : s) c = kHex[Next() & 15];
  return s;
}

std::string Rng::Bytes(int n) {
  std::string s(n, '\0');
  for (int i = 0; i < n; i += 8) {
    const uint64_t v = Next();
    for (int j = 0; j < 8 && i + j < n; ++j) {
      s[i + j] = static_cast<char>(v >> (8 * j));
    }
  }
  return s;
}

std::string Rng::Digits(int n) {
  std::string s(n, '0');
  for (char& c : s) c = static_cast<char>('0' + Next() % 10);
  if (n > 1 && s[0] == '0') s[0] = '1';
  return s;
}

namespace {
// Words of log lines and messages (a few hundred distinct ones would do;
// what matters is that text is text: short tokens and spaces).
constexpr std::array<std::string_view, 48> kWords = {
    "request", "user",     "failed",  "completed", "order",   "payment",
    "timeout", "retrying", "cache",   "miss",      "hit",     "database",
    "query",   "took",     "ms",      "session",   "token",   "expired",
    "invalid", "upstream", "service", "returned",  "status",  "connection",
    "reset",   "by",       "peer",    "handler",   "started", "processing",
    "batch",   "of",       "items",   "for",       "account", "the",
    "a",       "to",       "from",    "with",      "on",      "in",
    "queue",   "message",  "worker",  "shard",     "commit",  "offset"};
}  // namespace

std::string Rng::Words(int n) {
  std::string s;
  s.reserve(n + 16);
  while (static_cast<int>(s.size()) < n) {
    if (!s.empty()) s.push_back(' ');
    s.append(Pick(kWords));
  }
  return s;
}

std::string Rng::Json(int n) {
  // Shaped like an application event: a few ids, enums, numbers and a
  // free-text field that absorbs the remaining size.
  static constexpr std::array<std::string_view, 6> kEvents = {
      "order.created", "order.paid",   "user.signed_in",
      "cart.updated",  "item.shipped", "invoice.issued"};
  std::string s =
      Cat("{\"event\":\"", Pick(kEvents), "\",\"id\":\"", Hex(8), "-", Hex(4),
          "-", Hex(4), "-", Hex(4), "-", Hex(12), "\",\"user_id\":", Digits(9),
          ",\"ts\":", 1700000000000 + Uniform(0, 99999999999),
          ",\"amount\":", Uniform(1, 99999), ".", Digits(2),
          ",\"currency\":\"EUR\",\"note\":\"");
  const int rest = n - static_cast<int>(s.size()) - 2;
  if (rest > 0) s.append(Words(rest));
  s.append("\"}");
  return s;
}

std::vector<std::string> GenerateMix(
    uint64_t seed, int count, std::initializer_list<Share> shares,
    void (*make)(int kind, Rng& rng, google::protobuf::Message* request),
    const google::protobuf::Message& prototype) {
  std::vector<int> block;
  for (const Share& s : shares) block.insert(block.end(), s.per_100, s.kind);
  std::vector<std::string> out;
  out.reserve(std::max(count, 0));
  std::vector<int> order;
  for (int i = 0; i < count; ++i) {
    if (i % static_cast<int>(block.size()) == 0) {
      // Fisher-Yates with the block's own generator.
      order = block;
      Rng shuffle(Mix(seed, 0x5eed0000ULL + i / block.size()));
      for (size_t j = order.size() - 1; j > 0; --j) {
        std::swap(order[j], order[shuffle.Next() % (j + 1)]);
      }
    }
    Rng rng(Mix(Mix(seed, 0x9e1ULL), static_cast<uint64_t>(i)));
    // Built on an arena: the remote-write batches are ~90,000 messages.
    google::protobuf::Arena arena;
    google::protobuf::Message* request = prototype.New(&arena);
    make(order[i % order.size()], rng, request);
    // Deterministic: map entries sorted by key (the default order of a
    // map's entries depends on a per-process hash seed).
    std::string bytes;
    {
      google::protobuf::io::StringOutputStream stream(&bytes);
      google::protobuf::io::CodedOutputStream coded(&stream);
      coded.SetSerializationDeterministic(true);
      // Built from the generator's own fields: nothing required is missing.
      (void)request->SerializeToCodedStream(&coded);
    }
    out.push_back(std::move(bytes));
  }
  return out;
}

}  // namespace internal

const std::vector<Service>& Services() {
  static const std::vector<Service>* const services = new std::vector<Service>{
      internal::HealthService(),      internal::OtlpTraceService(),
      internal::OtlpMetricsService(), internal::OtlpLogsService(),
      internal::PubsubService(),      internal::LoggingService(),
      internal::EtcdService(),        internal::HoraedbService(),
      internal::CortexService(),      internal::EtcdRangeService()};
  return *services;
}

const Service* FindService(std::string_view name) {
  for (const Service& s : Services()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

}  // namespace arenarpc::corpus
