// DynamicMessage costs do not transfer to generated code (on the
// calibration workloads below, 3.21: dynamic is 1.9-9.3x slower, and by a
// different factor per mode), so
// --code=dynamic scales its measurements by a per-mode factor,
// generated / dynamic, fitted on the project's test protos. Reuse of a type
// Clear() keeps whole has its own factor (generated Clear() is far cheaper
// than DynamicMessage's reflective one); of any other type, MessagePool
// gives each use a fresh arena, so it takes arena's.
//
// Fit: `nice build/rel/tests/advise_calibrate` (tests/advise_calibrate.cc,
// protobuf 3.21.12, g++ 12.2), output kept in
// docs/raw/advise/calibration.txt. The factor is the geometric mean over
// nine workloads, the spread the largest deviation of one workload from it
// (arena's, driven by 16-byte Leaf messages).
#ifndef ARENARPC_TOOLS_ADVISE_CALIBRATION_H_
#define ARENARPC_TOOLS_ADVISE_CALIBRATION_H_

#include <array>

#include "arenarpc/allocation_mode.h"

namespace arenarpc::advise {

// By AllocationMode: heap, arena, reuse (of a type Clear() keeps whole).
inline constexpr std::array<double, kNumAllocationModes> kGeneratedPerDynamic =
    {0.401, 0.353, 0.137};
// A calibrated prediction is expected within +- this share.
inline constexpr double kCalibrationSpread = 0.38;

}  // namespace arenarpc::advise

#endif  // ARENARPC_TOOLS_ADVISE_CALIBRATION_H_
