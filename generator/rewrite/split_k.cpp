#include "generator/rewrite/split_k.hpp"

#include "generator/cost/rewrite_pays.hpp"
#include "generator/rewrite/fresh_name.hpp"
#include "generator/select/families/igemm/implicit_gemm.hpp"
#include "generator/select/select.hpp"

#include <algorithm>
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
  Buffer partial, tickets;
  Step zero, compute, sum; // zero, sum: launch steps of the form's (fn copy where unused)
};

// The counters an in-kernel split may use: one per output tile at the smallest tile the
// implicit GEMM offers, four times over for the Hopper family's, which counts per consumer
// warp's 16 rows of a tile of BN >= 64 channels (a variant needing more is not offered).
int64_t most_counters(const Shape& y) {
  int bm = 1 << 30, bn = 1 << 30;
  for (const IgemmTile& t : igemm_tiles())
    bm = std::min(bm, t.bm), bn = std::min(bn, t.bn);
  const int64_t rows = numel(y) / y[1]; // N * OH * OW (y [N, O, ...])
  return 4 * ((rows + bm - 1) / bm * ((y[1] + bn - 1) / bn));
}

// The split of step s over `slices` ranges, in the form asked for; the buffers it adds go at
// the end of p.buffers (partial, then tickets).
Split make_split(const Plan& p, const Step& s, int64_t slices, SplitForm form) {
  const bool linear = s.fn == Fn::linear_forward;
  const Buffer& y = p.buffers[s.need("y")];
  Split out;
  out.partial.name = fresh_buffer_name(p, y.name + ".partial");
  out.partial.shape = y.shape;
  out.partial.shape[0] *= slices;
  out.partial.dtype = DType::f32;
  out.partial.role = BufferRole::activation;
  out.partial.layout = y.layout;
  const int partial = int(p.buffers.size()); // where it goes
  out.compute.kind = StepKind::launch;
  out.compute.node = s.node;
  out.compute.op = s.op;
  out.compute.attrs = s.attrs;
  if (form == SplitForm::in_kernel) {
    // One step: the forward with its epilogue, the slices and the tile counters its workspace.
    out.tickets.name = fresh_buffer_name(p, y.name + ".tickets");
    out.tickets.shape = {most_counters(y.shape)};
    out.tickets.dtype = DType::i32;
    out.tickets.role = BufferRole::activation; // derived once the prepare phase zeroes it
    const int tickets = partial + 1;
    out.compute.fn = linear ? Fn::linear_forward_split : Fn::conv2d_forward_split;
    out.compute.params = default_params(out.compute.fn);
    out.compute.epilogue = s.epilogue;
    out.compute.args = {{"x", s.need("x")}, {"w", s.need("w")}};
    for (const char* role : {"b", "residual"})
      if (s.arg(role) >= 0) out.compute.args.push_back({role, s.arg(role)});
    out.compute.args.push_back({"tickets", tickets});
    out.compute.args.push_back({"y", s.need("y")});
    out.compute.args.push_back({"partial", partial});
    // Zeroed before the first launch; hoist_parameter_work moves it into the prepare phase.
    out.zero.kind = StepKind::launch;
    out.zero.fn = Fn::fill_zero;
    out.zero.params = default_params(Fn::fill_zero);
    out.zero.node = s.node;
    out.zero.op = s.op;
    out.zero.args = {{"dst", tickets}};
    return out;
  }
  out.compute.fn = linear ? Fn::linear_forward_partial : Fn::conv2d_forward_partial;
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

// The split's estimate: its launches' (the counters' zeroing runs once, not per forward).
double split_estimate_us(Plan& p, const Step& s, int64_t slices, SplitForm form, const GpuDesc& g) {
  Split sp = make_split(p, s, slices, form);
  p.buffers.push_back(sp.partial); // visible to the families while costed
  if (form == SplitForm::in_kernel) p.buffers.push_back(sp.tickets);
  const double us = kernel_estimate_us({p, sp.compute, g}) +
                    (form == SplitForm::two_step ? kernel_estimate_us({p, sp.sum, g}) : 0.0);
  p.buffers.resize(p.buffers.size() - (form == SplitForm::in_kernel ? 2 : 1));
  return us;
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
      d.in_kernel_us = d.two_step_us = INFINITY;
      for (int64_t slices : kSlices) {
        if (slices > (K + 15) / 16) break;
        const double in = split_estimate_us(p, ph.steps[i], slices, SplitForm::in_kernel, g);
        const double two = split_estimate_us(p, ph.steps[i], slices, SplitForm::two_step, g);
        if (in < d.in_kernel_us) d.in_kernel_us = in, d.in_kernel_slices = slices;
        if (two < d.two_step_us) d.two_step_us = two, d.two_step_slices = slices;
      }
      d.form = d.in_kernel_us <= d.two_step_us ? SplitForm::in_kernel : SplitForm::two_step;
      d.split_us = std::min(d.in_kernel_us, d.two_step_us);
      d.slices = d.form == SplitForm::in_kernel ? d.in_kernel_slices : d.two_step_slices;
      if (!std::isfinite(d.split_us) || !rewrite_pays(d.unsplit_us, d.split_us)) continue;
      Split sp = make_split(p, ph.steps[i], d.slices, d.form);
      p.buffers.push_back(std::move(sp.partial));
      if (d.form == SplitForm::in_kernel) {
        p.buffers.push_back(std::move(sp.tickets));
        ph.steps[i] = std::move(sp.compute);
        ph.steps.insert(ph.steps.begin() + long(i), std::move(sp.zero));
      } else {
        ph.steps[i] = std::move(sp.compute);
        ph.steps.insert(ph.steps.begin() + long(i) + 1, std::move(sp.sum));
      }
      ++i;
      out.push_back(d);
    }
  return out;
}

nlohmann::ordered_json split_k_json(const SplitKDecision& d) {
  const auto us = [](double v) { return std::round(v * 1000) / 1000; };
  // The form not chosen: its best estimate and S, or null where no variant served it.
  const auto alt = [&](double v, int64_t slices) {
    return std::isfinite(v) ? nlohmann::ordered_json{{"slices", slices}, {"us", us(v)}}
                            : nlohmann::ordered_json();
  };
  return {{"node", d.node},
          {"form", d.form == SplitForm::in_kernel ? "in_kernel" : "two_step"},
          {"slices", d.slices},
          {"unsplit_us", us(d.unsplit_us)},
          {"split_us", us(d.split_us)},
          {"in_kernel", alt(d.in_kernel_us, d.in_kernel_slices)},
          {"two_step", alt(d.two_step_us, d.two_step_slices)}};
}

} // namespace kiln
