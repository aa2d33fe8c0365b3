#include "generator/rewrite/backward_weight_split.hpp"

#include "generator/cost/rewrite_pays.hpp"
#include "generator/rewrite/fresh_name.hpp"
#include "generator/rewrite/us_json.hpp"
#include "generator/select/select.hpp"

#include <cmath>

namespace kiln {

namespace {

constexpr int64_t kSlices[] = {2, 4, 8, 16, 32, 64, 128};
constexpr int64_t kMinPositions = 256; // per slice: a few BK steps at least

// Any layout and type: the tensor-core family serves channels-last f16 and bf16 slices, the
// CUDA-core one the rest (a stem's C = 3, NCHW, whose dw of 64 x 147 is 19 tiles alone).
bool eligible(const Plan& p, const Step& s) {
  if (s.fn != Fn::conv2d_backward_weight || s.kind == StepKind::free ||
      s.sparse.guard != Guard::none || s.arg("dw") < 0)
    return false;
  const DType t = p.buffers[s.need("x")].dtype;
  return t == DType::f16 || t == DType::bf16 || t == DType::f32;
}

struct Split {
  Buffer partial;
  Step sliced, sum;
};

Split make_split(const Plan& p, const Step& s, int64_t slices) {
  const Buffer& dw = p.buffers[s.need("dw")];
  Split sp;
  sp.partial.name = fresh_buffer_name(p, dw.name + ".slices");
  sp.partial.shape = dw.shape;
  sp.partial.shape.insert(sp.partial.shape.begin(), slices);
  sp.partial.dtype = DType::f32;
  sp.partial.role = BufferRole::activation;
  const int partial = int(p.buffers.size());
  sp.sliced = s;
  sp.sliced.accumulate = false;
  for (Arg& a : sp.sliced.args)
    if (a.role == "dw") a = {"partial", partial};
  sp.sum.kind = StepKind::launch;
  sp.sum.fn = Fn::partial_sum;
  sp.sum.params = default_params(Fn::partial_sum);
  sp.sum.node = s.node;
  sp.sum.op = s.op;
  sp.sum.accumulate = s.accumulate;
  sp.sum.args = {{"partial", partial}, {"dst", s.need("dw")}};
  return sp;
}

double split_us(Plan& p, const Step& s, int64_t slices, const GpuDesc& g) {
  Split sp = make_split(p, s, slices);
  p.buffers.push_back(sp.partial); // visible to the families while costed
  const double us = kernel_estimate_us({p, sp.sliced, g}) + kernel_estimate_us({p, sp.sum, g});
  p.buffers.pop_back();
  return us;
}

} // namespace

std::vector<BackwardWeightSplitDecision> plan_backward_weight_split(Plan& p, const GpuDesc& g) {
  std::vector<BackwardWeightSplitDecision> out;
  if (!p.train) return out;
  for (Phase& ph : p.phases)
    for (size_t i = 0; i < ph.steps.size(); ++i) {
      if (!eligible(p, ph.steps[i])) continue;
      const Shape& dy = p.buffers[ph.steps[i].need("dy")].shape;
      const int64_t positions = dy[0] * dy[2] * dy[3];
      BackwardWeightSplitDecision d;
      d.node = ph.steps[i].node;
      d.one_step_us = kernel_estimate_us({p, ph.steps[i], g});
      d.split_us = INFINITY;
      for (int64_t slices : kSlices) {
        if (positions / slices < kMinPositions) break;
        if (const double us = split_us(p, ph.steps[i], slices, g); us < d.split_us)
          d.split_us = us, d.slices = slices;
      }
      if (!std::isfinite(d.split_us) ||
          (std::isfinite(d.one_step_us) && !rewrite_pays(d.one_step_us, d.split_us)))
        continue;
      Split sp = make_split(p, ph.steps[i], d.slices);
      p.buffers.push_back(std::move(sp.partial));
      ph.steps[i] = std::move(sp.sliced);
      ph.steps.insert(ph.steps.begin() + long(i) + 1, std::move(sp.sum));
      ++i;
      out.push_back(d);
    }
  return out;
}

nlohmann::ordered_json backward_weight_split_json(const BackwardWeightSplitDecision& d) {
  return {{"node", d.node},
          {"slices", d.slices},
          {"one_step_us", us_json(d.one_step_us)},
          {"split_us", us_json(d.split_us)}};
}

} // namespace kiln
