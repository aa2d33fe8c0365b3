// Who reads (and writes) a buffer in a phase's steps: what the fusing rewrites (conv + pool, a
// gate into its conv, batchnorm activations) ask before they remove or move a step.
#pragma once

#include "runtime/plan.hpp"
#include "runtime/step_fn.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace kiln {

// The steps (indices into `steps`, but `writer`) reading buffer b, and SIZE_MAX for each
// other holder: a view of it, or b a plan output.
inline std::vector<size_t> readers(const Plan& p, const std::vector<Step>& steps, int b,
                                   size_t writer) {
  std::vector<size_t> out;
  for (size_t i = 0; i < steps.size(); ++i)
    if (i != writer)
      for (const Arg& a : steps[i].args)
        if (a.buffer == b) out.push_back(i);
  for (const Buffer& v : p.buffers)
    if (v.view_of == b) out.push_back(SIZE_MAX);
  for (int o : p.outputs)
    if (o == b) out.push_back(SIZE_MAX);
  return out;
}

// Whether something besides the plan's steps holds buffer b: a view of it, or b a plan input,
// output, target or loss (a rewrite that renames or removes b's writer must leave it alone).
inline bool held_beyond_steps(const Plan& p, int b) {
  const auto in = [b](const std::vector<int>& v) {
    return std::find(v.begin(), v.end(), b) != v.end();
  };
  return in(p.inputs) || in(p.outputs) || b == p.target || b == p.loss ||
         std::any_of(p.buffers.begin(), p.buffers.end(),
                     [b](const Buffer& v) { return v.view_of == b; });
}

// Whether a step of steps (from, to) writes buffer b.
inline bool written_between(const std::vector<Step>& steps, size_t from, size_t to, int b) {
  for (size_t k = from + 1; k < to; ++k)
    for (const Arg& a : steps[k].args)
      if (a.buffer == b && fn_writes(steps[k].fn, a.role)) return true;
  return false;
}

} // namespace kiln
