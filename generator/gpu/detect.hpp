// Describes the live GPU through the CUDA runtime (which loads the driver itself: kiln
// never links libcuda, so it starts without one).
#pragma once

#include "generator/gpu/gpu_desc.hpp"

namespace kiln {

// Throws kiln::Error saying clearly whether the driver or the device is missing.
GpuDesc detect_gpu(int device = 0);

// --gpu of the commands that run a model (run, train, profile): "auto" is the live GPU where
// the model runs on one (device "gpu"), else the h200 descriptor (the emulator's kernels and
// the schedules are made for some GPU); anything else a descriptor file or a shipped name.
GpuDesc gpu_for_device(const std::string& gpu, const std::string& device);

// Per-SM arithmetic rates (flops per clock) used to estimate peaks of a live device,
// which the driver does not report.
PeakTflops estimate_peaks(int compute_capability, int64_t sm_count, double clock_mhz);

} // namespace kiln
