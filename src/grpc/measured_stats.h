// The measured methods' part of GetGrpcStats() (src/grpc/stats.cc): kAuto's
// (src/grpc/auto_method.cc) and shadow measurement's
// (src/grpc/shadow_meter.cc). Thread safety: any thread.
#ifndef ARENARPC_SRC_GRPC_MEASURED_STATS_H_
#define ARENARPC_SRC_GRPC_MEASURED_STATS_H_

#include <vector>

#include "arenarpc/grpc/stats.h"

namespace arenarpc::internal {

std::vector<MeasuredMethodStats> AutoMethodsStats();
std::vector<MeasuredMethodStats> ShadowMethodStats();
// CPU so far, ns: kAuto's learning, shadow's sampling on the call threads.
double AutoLearningCpuNs();
double ShadowSamplingCpuNs();

}  // namespace arenarpc::internal

#endif  // ARENARPC_SRC_GRPC_MEASURED_STATS_H_
