// Shadow measurement: what another mode would cost, measured on live
// traffic in any installed mode, without changing how calls are served.
//
//   arenarpc::ServerOptions options(arenarpc::AllocationMode::kHeap);
//   options.shadow.sample_one_in = 100;            // 1 call in 100
//   options.shadow.capture_dir = "/var/tmp/cap";   // optional, for
//                                                  // arenarpc_advise
//   r = mysvc::InstallMyServiceAllocators(&service, options);
//   ...
//   #include "arenarpc/grpc/stats.h"
//   for (const auto& m : arenarpc::GetGrpcStats().shadow_methods) { ... }
//
// A sampled call's request and response are serialized on its thread and
// parsed again in each mode on the library's background thread; per
// method, GetGrpcStats().shadow_methods shows the cost per mode, the
// cheaper mode and the saving per call. It never waits: samples that do not
// fit the bounded queue or `max_cpu_share` are dropped (counted). With
// `capture_dir`, sampled requests are also written as
// <capture_dir>/<method>/NNNNNN.bin for arenarpc_advise (docs/ADVISE.md).
// `max_cpu_share` is process-wide (when installs differ, the largest wins)
// and separate from kAuto's budget; shadow never feeds kAuto's decision.
//
// Thread safety: a plain options struct, copied by the install.
// Lifetime: a measured method's meter lives as long as the process.
#ifndef ARENARPC_GRPC_SHADOW_H_
#define ARENARPC_GRPC_SHADOW_H_

#include <cstdint>
#include <string>

namespace arenarpc {

struct ShadowOptions {
  int sample_one_in = 0;        // 0: off; N: a random 1 in N calls measured
  double max_cpu_share = 0.01;  // measuring CPU / the process's
  std::string capture_dir;      // "": measure only; else also write samples
  int capture_max_files = 200;  // per method, files already there included
  uint64_t capture_max_bytes = uint64_t{64} << 20;  // per method
};

}  // namespace arenarpc

#endif  // ARENARPC_GRPC_SHADOW_H_
