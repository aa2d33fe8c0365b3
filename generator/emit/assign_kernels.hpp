// Kernel choice for every step of a plan: layouts reconciled with what the chosen variants
// need (converting weights or activations where they must), then each step becomes a
// launch of a deduplicated kernel or a cuDNN library call.
#pragma once

#include "generator/select/select.hpp"
#include "runtime/plan.hpp"

#include <string>
#include <vector>

namespace kiln {

struct KernelRecord {
  Variant variant;
  CostEstimate cost;
  std::vector<std::string> nodes; // "layer1.0.conv1 (conv2d.forward)"
  std::string reason;
  bool chosen = true;    // false: an alternative emitted for sweeps (--variants all)
  bool measured = false; // chosen by a measurement (tuning database), not the cost model
};

struct LibraryRecord {
  std::string node;
  std::string reason;
};

struct Assigned {
  std::vector<KernelRecord> kernels; // in order of first use; alternatives after
  std::vector<LibraryRecord> library_steps;
};

// With `cudnn_only`, every step cuDNN computes becomes a library call (the peer plan of
// benchmarks); the rest keep generated kernels. `hints`: measured winners (kiln tune).
Assigned assign_kernels(Plan& p, const GpuDesc& g, bool keep_alternatives, bool cudnn_only = false,
                        const SelectionHints* hints = nullptr);

std::string step_label(const Step& s);

} // namespace kiln
