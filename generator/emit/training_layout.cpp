#include "generator/emit/training_layout.hpp"

#include "generator/emit/assign_kernels.hpp"
#include "generator/rewrite/layouts.hpp"
#include "runtime/error.hpp"

#include <cmath>
#include <limits>
#include <utility>

namespace kiln {

namespace {

// The plan in layout l as generate() would make it: the predicted time of its launches and
// its library steps; infinity where some step has neither a kernel nor a cuDNN call in l.
std::pair<double, size_t> price(Plan p, Layout l, const GpuDesc& g, bool budgeted) {
  apply_layout(p, l);
  apply_training_rewrites(p, g, budgeted);
  Assigned a;
  try {
    a = assign_kernels(p, g, false);
  } catch (const Error&) { // last whatever the other layout's library steps
    return {INFINITY, std::numeric_limits<size_t>::max()};
  }
  double us = 0;
  for (const Phase& ph : p.phases)
    for (const Step& s : ph.steps)
      if (s.kind == StepKind::launch) us += a.kernels[size_t(s.kernel)].cost.micros;
  return {us, a.library_steps.size()};
}

} // namespace

TrainingRewrites apply_training_rewrites(Plan& p, const GpuDesc& g, bool budgeted) {
  TrainingRewrites r;
  if (!p.train || budgeted) return r;
  r.batchnorm_chunks = plan_batchnorm_chunks(p, g);
  r.batchnorm_activations = fuse_batchnorm_activations(p); // into the chunked forwards
  r.relu_backwards = fuse_relu_backwards_into_batchnorm(p); // into the chunked backwards
  r.backward_data_convs = plan_backward_data_as_conv(p, g);
  r.backward_weight_splits = plan_backward_weight_split(p, g);
  r.forwarded_copies = forward_copies(p); // after the data gradients' residual readers
  return r;
}

TrainingLayoutChoice choose_training_layout(const Plan& p, const GpuDesc& g, bool budgeted) {
  TrainingLayoutChoice c;
  std::tie(c.nchw_us, c.nchw_library) = price(p, Layout::nchw, g, budgeted);
  std::tie(c.nhwc_us, c.nhwc_library) = price(p, Layout::nhwc, g, budgeted);
  // Where neither serves every step, NCHW: generation then names the step no kernel serves.
  c.layout = std::pair(c.nhwc_library, c.nhwc_us) < std::pair(c.nchw_library, c.nchw_us)
                 ? Layout::nhwc
                 : Layout::nchw;
  return c;
}

} // namespace kiln
