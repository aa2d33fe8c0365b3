#include "generator/rewrite/split_k.hpp"

#include "generator/cost/rewrite_pays.hpp"
#include "generator/select/select.hpp"

#include <cmath>

namespace kiln {

namespace {

// The split factors tried: few enough to cost every one, spread enough to fill a GPU from
// a single tile.
constexpr int64_t kSlices[] = {2, 3, 4, 6, 8, 12, 16};

// The reduction's length, or 0 where the step cannot be split.
int64_t reduction(const Plan& p, const Step& s) {
  const bool linear = s.fn == Fn::linear_forward;
  if ((s.fn != Fn::conv2d_forward && !linear) || s.kind == StepKind::free || s.accumulate ||
      s.sparse.guard != Guard::none || s.arg("y_values") >= 0 || (!linear && s.attrs.groups != 1))
    return 0;
  const Buffer& y = p.buffers[s.need("y")];
  const Shape& w = p.buffers[s.need("w")].shape;
  if (y.view_of >= 0) return 0; // partial.sum writes its output whole
  if (linear) return y.shape.size() == 2 && w.size() == 2 ? w[1] : 0;
  if (y.shape.size() != 4 || w.size() != 4 || y.layout != Layout::nhwc) return 0;
  return w[1] * w[2] * w[3];
}

struct Split {
  Buffer partial;
  Step compute, sum;
};

Split make_split(const Plan& p, const Step& s, int64_t slices) {
  const bool linear = s.fn == Fn::linear_forward;
  const Buffer& y = p.buffers[s.need("y")];
  Split out;
  out.partial.name = y.name + ".partial";
  for (int k = 2; p.find_buffer(out.partial.name) >= 0; ++k)
    out.partial.name = y.name + ".partial#" + std::to_string(k);
  out.partial.shape = y.shape;
  out.partial.shape[0] *= slices;
  out.partial.dtype = DType::f32;
  out.partial.role = BufferRole::activation;
  out.partial.layout = y.layout;
  const int partial = int(p.buffers.size()); // where it goes
  out.compute.kind = StepKind::launch;
  out.compute.fn = linear ? Fn::linear_forward_partial : Fn::conv2d_forward_partial;
  out.compute.node = s.node;
  out.compute.op = s.op;
  out.compute.attrs = s.attrs;
  out.compute.args = {{"x", s.need("x")}, {"w", s.need("w")}, {"partial", partial}};
  out.sum.kind = StepKind::launch;
  out.sum.fn = Fn::partial_sum;
  out.sum.node = s.node;
  out.sum.op = s.op;
  out.sum.epilogue = s.epilogue;
  out.sum.args = {{"partial", partial}};
  for (const char* role : {"b", "residual"})
    if (s.arg(role) >= 0) out.sum.args.push_back({role, s.arg(role)});
  out.sum.args.push_back({"dst", s.need("y")});
  return out;
}

} // namespace

std::vector<SplitKDecision> plan_split_k(Plan& p, const GpuDesc& g) {
  std::vector<SplitKDecision> out;
  if (p.train) return out; // training plans keep their schedules' accounting as it is
  for (Phase& ph : p.phases)
    for (size_t i = 0; i < ph.steps.size(); ++i) {
      const int64_t K = reduction(p, ph.steps[i]);
      if (K < 32) continue;
      SplitKDecision d;
      d.node = ph.steps[i].node;
      d.unsplit_us = kernel_estimate_us({p, ph.steps[i], g});
      if (!std::isfinite(d.unsplit_us)) continue; // a library step stays one
      d.split_us = INFINITY;
      for (int64_t slices : kSlices) {
        if (slices > (K + 15) / 16) break;
        Split sp = make_split(p, ph.steps[i], slices);
        p.buffers.push_back(sp.partial); // visible to the families while costed
        const double us =
            kernel_estimate_us({p, sp.compute, g}) + kernel_estimate_us({p, sp.sum, g});
        p.buffers.pop_back();
        if (us < d.split_us) {
          d.split_us = us;
          d.slices = slices;
        }
      }
      if (!rewrite_pays(d.unsplit_us, d.split_us)) continue;
      Split sp = make_split(p, ph.steps[i], d.slices);
      p.buffers.push_back(std::move(sp.partial));
      ph.steps[i] = std::move(sp.compute);
      ph.steps.insert(ph.steps.begin() + long(i) + 1, std::move(sp.sum));
      ++i;
      out.push_back(d);
    }
  return out;
}

nlohmann::ordered_json split_k_json(const SplitKDecision& d) {
  const auto us = [](double v) { return std::round(v * 1000) / 1000; };
  return {{"node", d.node},
          {"slices", d.slices},
          {"unsplit_us", us(d.unsplit_us)},
          {"split_us", us(d.split_us)}};
}

} // namespace kiln
