// A template family seen from the generator: which plan steps it serves and the variants
// (compile-time configurations and launch geometry) it offers for one of them. Each
// family lives next to knowledge of its template in templates/; keep the two in step.
#pragma once

#include "generator/gpu/gpu_desc.hpp"
#include "generator/select/variant.hpp"
#include "runtime/plan.hpp"

#include <string_view>
#include <vector>

namespace kiln {

// What a family sees of a step.
struct StepInfo {
  const Plan& plan;
  const Step& step;
  const GpuDesc& gpu;

  bool has(std::string_view role) const { return step.arg(role) >= 0; }
  const Buffer& arg(std::string_view role) const { return plan.buffers[step.need(role)]; }
  const Shape& shape(std::string_view role) const { return arg(role).shape; }
  DType dtype(std::string_view role) const { return arg(role).dtype; }
  Layout layout(std::string_view role) const { return arg(role).layout; }
  int cc() const { return gpu.compute_capability(); }
  std::string arch_tag() const { return "sm" + std::to_string(cc()); }
};

class Family {
public:
  virtual ~Family() = default;
  virtual std::string_view name() const = 0;
  // Every valid instance for this step on this GPU; empty when the family does not serve it.
  virtual std::vector<Variant> candidates(const StepInfo& s) const = 0;
};

// Every family, in a fixed order (selection breaks ties by it).
const std::vector<const Family*>& all_families();

// f's candidates for s that compute what s asks: a step's squeeze-excite gate
// (generator/rewrite/gates.cpp) is served only by a variant that reads it, so a family that
// knows nothing of gates is never chosen for a gated step (it would compute the ungated conv);
// a step that writes a tf32-rounded buffer only by a variant that rounds what it stores.
std::vector<Variant> step_candidates(const Family& f, const StepInfo& s);

} // namespace kiln
