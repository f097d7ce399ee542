#include "arenarpc/grpc/internal/shed.h"

#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "arenarpc/internal/mutex.h"

namespace arenarpc::internal {
namespace {

// `make`: made on first use, else nullptr if missing. Entries never move
// or die: handlers keep pointers to them.
ShedCounters* Lookup(std::string_view method, bool make) {
  static Mutex mu;
  static auto* const methods ABSL_PT_GUARDED_BY(mu) =
      new std::map<std::string, ShedCounters, std::less<>>();
  MutexLock lock(&mu);
  auto it = methods->find(method);
  if (it == methods->end()) {
    if (!make) return nullptr;
    it = methods->try_emplace(std::string(method)).first;
  }
  return &it->second;
}

}  // namespace

ShedCounters* ShedCountersFor(std::string_view method) {
  return Lookup(method, /*make=*/true);
}

const ShedCounters* FindShedCounters(std::string_view method) {
  return Lookup(method, /*make=*/false);
}

void AnswerPastDeadline(ShedCounters* counters, ::grpc::Status* answer) {
  counters->deadline.fetch_add(1, std::memory_order_relaxed);
  *answer = ::grpc::Status(::grpc::StatusCode::DEADLINE_EXCEEDED,
                           "arenarpc: deadline passed before the call was "
                           "handled");
}

}  // namespace arenarpc::internal
