#include "arenarpc/grpc/internal/shed.h"

#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "arenarpc/internal/mutex.h"

namespace arenarpc::internal {
namespace {

struct ShedRegistry {
  Mutex mu;
  // Values never move or die: handlers keep pointers to them.
  std::map<std::string, ShedCounters*, std::less<>> methods ABSL_GUARDED_BY(mu);
};
ShedRegistry& Registry() {
  static auto* const registry = new ShedRegistry;
  return *registry;
}

}  // namespace

ShedCounters* ShedCountersFor(std::string_view method) {
  ShedRegistry& r = Registry();
  MutexLock lock(&r.mu);
  auto it = r.methods.find(method);
  if (it != r.methods.end()) return it->second;
  ShedCounters* c = new ShedCounters;
  r.methods.emplace(std::string(method), c);
  return c;
}

const ShedCounters* FindShedCounters(std::string_view method) {
  ShedRegistry& r = Registry();
  MutexLock lock(&r.mu);
  auto it = r.methods.find(method);
  return it == r.methods.end() ? nullptr : it->second;
}

void AnswerPastDeadline(ShedCounters* counters, ::grpc::Status* answer) {
  counters->deadline.fetch_add(1, std::memory_order_relaxed);
  *answer = ::grpc::Status(::grpc::StatusCode::DEADLINE_EXCEEDED,
                           "arenarpc: deadline passed before the call was "
                           "handled");
}

}  // namespace arenarpc::internal
