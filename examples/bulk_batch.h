// The streaming example's batches (bulk.proto): how the server and the
// client build and check them.
//
//   arenarpc::bulk::Batch batch;                  // any arena
//   arenarpc::bulk::FillBatch(/*scale=*/100, /*sequence=*/7, &batch);
//   uint64_t sum = arenarpc::bulk::BatchChecksum(batch);
//
// Thread safety: plain functions of their arguments. Lifetime: none kept.
#ifndef ARENARPC_EXAMPLES_BULK_BATCH_H_
#define ARENARPC_EXAMPLES_BULK_BATCH_H_

#include <cstdint>

#include "bulk.pb.h"

namespace arenarpc::bulk {

// Fills an empty `batch` deterministically from (scale, sequence): the echo
// example's payload (scale 100: ~130 KB, ~11,100 byte fields).
void FillBatch(int scale, uint64_t sequence, Batch* batch);

// A hash of every field of `batch` (FNV-1a over its bytes in field order).
uint64_t BatchChecksum(const Batch& batch);

// ImportSummary::checksum: each batch's checksum mixed in, in order.
inline uint64_t MixChecksum(uint64_t sum, uint64_t batch_checksum) {
  return sum * 31 + batch_checksum;
}

}  // namespace arenarpc::bulk

#endif  // ARENARPC_EXAMPLES_BULK_BATCH_H_
