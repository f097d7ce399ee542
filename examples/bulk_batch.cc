#include "bulk_batch.h"

#include <string>

#include "echo_service.h"

namespace arenarpc::bulk {
namespace {

class Fnv {
 public:
  void Add(const std::string& bytes) {
    for (const char c : bytes) Byte(static_cast<unsigned char>(c));
    Byte(0xff);  // field separator: "ab","c" differs from "a","bc"
  }
  void Add(uint64_t v) {
    for (int i = 0; i < 8; ++i) Byte(static_cast<unsigned char>(v >> (8 * i)));
  }
  uint64_t value() const { return h_; }

 private:
  void Byte(unsigned char b) { h_ = (h_ ^ b) * 0x100000001B3ull; }
  uint64_t h_ = 0xCBF29CE484222325ull;
};

}  // namespace

void FillBatch(int scale, uint64_t sequence, Batch* batch) {
  batch->set_sequence(sequence);
  echo::FillPayload(scale, static_cast<uint32_t>(sequence),
                    batch->mutable_payload(), batch->mutable_results());
}

uint64_t BatchChecksum(const Batch& batch) {
  Fnv h;
  h.Add(batch.sequence());
  h.Add(static_cast<uint64_t>(batch.payload_size()));
  for (const std::string& p : batch.payload()) h.Add(p);
  h.Add(static_cast<uint64_t>(batch.results_size()));
  for (const echo::Result& r : batch.results()) {
    h.Add(r.id());
    h.Add(static_cast<uint64_t>(r.items_size()));
    for (const echo::Item& item : r.items()) {
      for (const std::string& t : item.terms()) h.Add(t);
      h.Add(static_cast<uint64_t>(item.score() * 1024));
    }
  }
  return h.value();
}

}  // namespace arenarpc::bulk
