// kiln check: every kernel of a generated directory run on fresh random inputs (never
// zeros; outputs poisoned first so unwritten elements show) on a device backend (emu or
// gpu), and compared with the CPU reference computed in f64 from the same inputs, within
// the tolerance its precision declares (DESIGN.md 6).
#pragma once

#include "runtime/backend.hpp"
#include "runtime/plan.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kiln {

struct KernelCheck {
  std::string kernel;
  std::string node;
  double max_abs = 0;
  double rel = 0;
  double tolerance = 0;
  bool pass = false;
  std::string error; // a device-side failure (emulator report, launch error)
  // The images compared with the reference, of the batch (image_sample.hpp); 0: all.
  int64_t images = 0, batch = 0;
};

struct CheckOptions {
  // A compacted input's density; default: the density the step was planned for, else one half.
  double density = -1;
  // Of a larger batch, the images an image-separable step is compared on; 0: all.
  int64_t images = 4;
};

// Relative-norm tolerance for a step's precision: fp32 1e-5, tf32 5e-4, fp16/bf16 1e-2.
double tolerance_for(const Plan& p, const Step& s, const std::string& math);

// A plan holding just `step` (its arguments as fresh persistent buffers; read ones as
// inputs, written ones as outputs) and, when `f64`, every float buffer in f64 and the step
// a reference step; with `images` > 0, its per-image buffers (FnDef::per_image) hold that
// many images.
Plan single_step_plan(const Plan& p, const Step& step, const Kernel* kernel, bool f64,
                      int64_t images = 0);

// One kernel on one step: fresh inputs, device vs f64 reference. A step that reads a
// compacted activation (runtime/sparse_form.hpp) gets one compacted from a random tensor
// with o.density nonzeros, and a guarded step an nnz that lets it run. Compacted outputs are
// compared decompacted; their nonzero totals may differ only where values lie within
// rounding of zero. An image-separable step of a batch above o.images runs whole on the
// device, every output element checked written, and is compared on o.images images.
KernelCheck check_step(const Plan& p, const Step& step, const Kernel& k, const std::string& math,
                       const BackendFactory& device, uint64_t seed, const CheckOptions& o = {});

// Checks every kernel of `dir` (alternatives too when `alternatives`), in manifest order.
std::vector<KernelCheck>
check_kernels(const std::string& dir, const BackendFactory& device, uint64_t seed,
              bool alternatives, const CheckOptions& o,
              const std::function<void(size_t, size_t, const std::string&)>& progress);

} // namespace kiln
