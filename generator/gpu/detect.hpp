// Describes the live GPU through the CUDA runtime (which loads the driver itself: kiln
// never links libcuda, so it starts without one).
#pragma once

#include "generator/gpu/gpu_desc.hpp"

namespace kiln {

// Throws kiln::Error saying clearly whether the driver or the device is missing.
GpuDesc detect_gpu(int device = 0);

// Per-SM arithmetic rates (flops per clock) used to estimate peaks of a live device,
// which the driver does not report.
PeakTflops estimate_peaks(int compute_capability, int64_t sm_count, double clock_mhz);

} // namespace kiln
