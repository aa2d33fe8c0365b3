// The CSV of kiln bench and kiln tune: one row per (layer shape, variant), columns stable
// (scripts read them by name; add columns at the end only):
//
//   descriptor     the GPU descriptor's identity (name@hash)
//   kiln_version
//   device         gpu, or emu (checked on the emulator: every timing column empty)
//   layers         the model's layers of this shape, ';'-separated
//   op, shape, dtype, layout   the shape's key (shape: each argument's logical dimensions)
//   variant, family
//   check          pass or FAIL: <why> (against the CPU reference, before any timing)
//   rel_err        relative error against the f64 reference
//   median_ms, runs            median of the timed runs (CUDA events)
//   tflops, gbps   the variant's FLOPs and bytes over its median time
//   cudnn_ms       cuDNN's best algorithm (cudnnFindConvolutionForwardAlgorithmEx) here
//   ratio_to_cudnn median_ms / cudnn_ms (below 1: faster than cuDNN)
//   predicted_us, floor_us     the cost model's estimate and the roofline floor
//   model_choice   1 for the cost model's pick
//   winner         1 for the fastest checked variant of the shape in this sweep
#pragma once

#include "generator/tune/sweep.hpp"

#include <string>
#include <vector>

namespace kiln {

inline constexpr const char* kSweepCsvHeader =
    "descriptor,kiln_version,device,layers,op,shape,dtype,layout,variant,family,check,rel_err,"
    "median_ms,runs,tflops,gbps,cudnn_ms,ratio_to_cudnn,predicted_us,floor_us,model_choice,"
    "winner";

std::string sweep_csv(const std::string& descriptor, const std::string& device,
                      const std::vector<WorkItem>& items, const std::vector<SweepRow>& rows);

} // namespace kiln
