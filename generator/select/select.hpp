// Variant choice: for each plan step, every family's candidates, filtered to those valid
// on the descriptor (threads, shared memory with opt-in, registers), costed; the cheapest
// wins (ties by family order, then name). Where no template serves a step, or none is
// within reach of what cuDNN does, the step becomes a cuDNN library call, and says why.
#pragma once

#include "generator/cost/kernel_cost.hpp"
#include "generator/select/family.hpp"
#include "generator/select/hints.hpp"

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kiln {

struct Candidate {
  Variant variant;
  CostEstimate cost;
};

struct Choice {
  std::optional<Candidate> kernel; // empty: a library step
  std::vector<Candidate> valid;    // every valid candidate, cheapest first
  std::string reason;              // why this choice (goes into the banner and manifest)
  bool measured = false;           // chosen by a measurement (tuning database), not the model
};

// Why a variant cannot run on the GPU, or "" when it can.
std::string invalid_reason(const GpuDesc& g, const Variant& v);
// The cost model's price of a valid variant; a main-loop variant is also set to be compiled
// for the occupancy it was priced at (Variant::min_blocks_per_sm).
CostEstimate price_variant(const GpuDesc& g, Variant& v);

// With `keep_activation_layouts`, variants that need an activation (a non-parameter
// argument) in another layout than it has are chosen only when no variant serves the step
// as it is: switching an activation's layout costs a transpose each way. With `hints`, a
// measured winner among the valid variants is chosen; else the cost model, its estimates
// scaled by the hints' per-family corrections, decides.
Choice select_variant(const StepInfo& s, bool keep_activation_layouts = true,
                      const SelectionHints* hints = nullptr);

// The chosen kernel's estimated microseconds, or infinity where no kernel template serves
// the step (a plan rewrite weighing steps it may create: never a library call there).
double kernel_estimate_us(const StepInfo& s);

// Estimates within kNearTie of the cheapest are within the model's noise: among DRAM-bound
// tiles its floors tie to 0.1% whatever their own limits (resnet50 b256 on the h100: a
// 64x32 mma.sync tile at 0.17 of peak by L2 beside Hopper tiles at 0.25-0.5). Of those, the
// one whose own ceilings (all but DRAM's: the kernel's, not the layer's) leave the most
// headroom goes first: less exposed where the floors are optimistic. Returns whether it moved.
inline constexpr double kNearTie = 0.01;
double own_ceiling(const Ceilings& c);
bool prefer_headroom_among_near_ties(std::span<Candidate> sorted_by_cost);

} // namespace kiln
