// Internal: shadow measurement (arenarpc/grpc/shadow.h) on the call path: a
// random 1 in sample_one_in calls is serialized when gRPC releases it and
// parsed again in every mode on the background thread. It never feeds
// kAuto's decision.
// Thread safety: a ShadowMeter is used by every call of its method at once;
// a SampledCall by one call at a time.
// Lifetime: a ShadowMeter is never destroyed (queued samples point to it).
#ifndef ARENARPC_GRPC_INTERNAL_SHADOW_METER_H_
#define ARENARPC_GRPC_INTERNAL_SHADOW_METER_H_

#include <google/protobuf/message.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "arenarpc/allocation_mode.h"
#include "arenarpc/grpc/internal/auto_call.h"  // ThreadCpuNs
#include "arenarpc/grpc/shadow.h"

namespace arenarpc::internal {

// A sampled message's bytes. From kMappedBytes on they get a mapping of
// their own: freed into the call thread's glibc arena, megabytes would stay
// at its top (docs/DESIGN_NOTES.md, "Memory after a burst").
class SampleBytes {
 public:
  static constexpr size_t kMappedBytes = size_t{128} << 10;

  SampleBytes() = default;
  explicit SampleBytes(std::string bytes) : heap_(std::move(bytes)) {}
  static SampleBytes Of(const google::protobuf::Message& message);

  std::string_view view() const {
    return mapped()
               ? std::string_view(mapped_.get(), mapped_.get_deleter().size)
               : heap_;
  }
  size_t size() const { return view().size(); }
  bool mapped() const { return mapped_ != nullptr; }

 private:
  struct Unmap {
    size_t size, map_size;  // of the bytes, of the mapping (whole pages)
    void operator()(char* p) const;
  };
  std::string heap_;
  std::unique_ptr<char, Unmap> mapped_;
};

class ShadowMeter {
 public:
  // `installed`: the mode calls run in (kAuto: the method's AutoMethod's).
  ShadowMeter(std::string name, AllocationMode installed,
              const ShadowOptions& options,
              const google::protobuf::Message* request_prototype,
              const google::protobuf::Message* response_prototype,
              const AutoMethod* automatic);
  ShadowMeter(const ShadowMeter&) = delete;
  ShadowMeter& operator=(const ShadowMeter&) = delete;

  // A random 1 in sample_one_in calls, while the queue has room.
  bool ShouldSample();
  // Queues a sampled call (the response serialized here); never waits.
  // `cpu_ns`: the call thread's CPU spent on the sample so far.
  void Submit(SampleBytes request, const google::protobuf::Message& response,
              double cpu_ns);
  // Queues serialized messages; false if dropped (bytes that do not parse
  // are counted as malformed).
  bool SubmitBytes(SampleBytes request, SampleBytes response);

  struct State;

 private:
  State* const state_;  // never destroyed
};

// A holder's part in a sampled call (none when `meter` is null): the
// request's bytes are taken at release, or before it is freed early. Each
// returns the CPU it spent (ns), which a timed call leaves out.
class SampledCall {
 public:
  explicit SampledCall(ShadowMeter* meter) : meter_(meter) {}
  double BeforeFreeRequest(const google::protobuf::Message& request) {
    if (meter_ == nullptr) return 0;
    const double start = ThreadCpuNs();
    request_ = SampleBytes::Of(request);
    return cpu_ns_ = ThreadCpuNs() - start;
  }
  double AtRelease(const google::protobuf::Message* request,
                   const google::protobuf::Message& response) {
    if (meter_ == nullptr) return 0;
    const double start = ThreadCpuNs();
    if (request != nullptr) BeforeFreeRequest(*request);
    if (request_.has_value())
      meter_->Submit(std::move(*request_), response, cpu_ns_);
    return ThreadCpuNs() - start;
  }

 private:
  ShadowMeter* const meter_;
  std::optional<SampleBytes> request_;  // taken, not yet submitted
  double cpu_ns_ = 0;
};

// Tests: while paused, queued samples wait; the samples waiting now.
void PauseShadowForTest(bool paused);
size_t QueuedShadowSamplesForTest();

}  // namespace arenarpc::internal

#endif  // ARENARPC_GRPC_INTERNAL_SHADOW_METER_H_
