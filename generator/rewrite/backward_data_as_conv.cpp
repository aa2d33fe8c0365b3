#include "generator/rewrite/backward_data_as_conv.hpp"

#include "generator/cost/rewrite_pays.hpp"
#include "generator/rewrite/backward_data_phases.hpp"
#include "generator/rewrite/fresh_name.hpp"
#include "generator/rewrite/us_json.hpp"
#include "generator/select/select.hpp"

#include <cmath>

namespace kiln {

namespace {

bool eligible(const Plan& p, const Step& s) {
  if (s.fn != Fn::conv2d_backward_data || s.kind == StepKind::free) return false;
  const Attrs& a = s.attrs;
  const Shape& w = p.buffers[s.need("w")].shape;
  if (a.groups != 1 || a.stride != Int2{1, 1} || a.dilation != Int2{1, 1} || w.size() != 4 ||
      (a.padding_end != Int2{-1, -1} && a.padding_end != a.padding) || a.padding[0] >= w[2] ||
      a.padding[1] >= w[3])
    return false;
  if (!s.accumulate) return true;
  // Adding into dx: a new buffer instead, which only works for a plain activation.
  const int dx = s.need("dx");
  const Buffer& b = p.buffers[dx];
  if (b.role != BufferRole::activation || b.view_of >= 0) return false;
  for (const Buffer& o : p.buffers)
    if (o.view_of == dx) return false;
  return true;
}

struct AsConv {
  Buffer flipped, sum; // sum: the new dx of an accumulating step
  Step flip, conv;
};

// The pair for step s; its buffers go at the end of p.buffers (flipped, then sum).
AsConv make_conv(const Plan& p, const Step& s) {
  const Buffer& w = p.buffers[s.need("w")];
  AsConv c;
  c.flipped = w;
  // "flip:": weight-like, written in the layout its conv's kernel reads (select.cpp).
  c.flipped.name = fresh_buffer_name(p, "flip:" + w.name);
  c.flipped.shape = {w.shape[1], w.shape[0], w.shape[2], w.shape[3]};
  c.flipped.role = BufferRole::activation;
  c.flipped.view_of = -1;
  c.flipped.view_offset = 0;
  c.flipped.layout = Layout::nchw;
  const int flipped = int(p.buffers.size());
  c.flip.kind = StepKind::launch;
  c.flip.fn = Fn::conv2d_flip_weight;
  c.flip.params = default_params(Fn::conv2d_flip_weight);
  c.flip.node = s.node;
  c.flip.op = s.op;
  c.flip.args = {{"w", s.need("w")}, {"w_out", flipped}};
  c.conv.kind = StepKind::launch;
  c.conv.fn = Fn::conv2d_forward;
  c.conv.params = default_params(Fn::conv2d_forward);
  c.conv.node = s.node;
  c.conv.op = s.op;
  c.conv.attrs = s.attrs;
  c.conv.attrs.out_channels = w.shape[1];
  c.conv.attrs.bias = false;
  c.conv.attrs.padding = {w.shape[2] - 1 - s.attrs.padding[0], w.shape[3] - 1 - s.attrs.padding[1]};
  c.conv.attrs.padding_end = {-1, -1};
  c.conv.args = {{"x", s.need("dy")}, {"w", flipped}};
  if (s.accumulate) {
    c.sum = p.buffers[s.need("dx")];
    c.sum.name = fresh_buffer_name(p, c.sum.name + ".sum");
    c.conv.args.push_back({"residual", s.need("dx")});
    c.conv.args.push_back({"y", flipped + 1});
  } else {
    c.conv.args.push_back({"y", s.need("dx")});
  }
  return c;
}

double conv_us(Plan& p, const Step& s, const GpuDesc& g) {
  AsConv c = make_conv(p, s);
  p.buffers.push_back(c.flipped); // visible to the families while costed
  if (s.accumulate) p.buffers.push_back(c.sum);
  const double us = kernel_estimate_us({p, c.flip, g}) + kernel_estimate_us({p, c.conv, g});
  p.buffers.resize(p.buffers.size() - (s.accumulate ? 2 : 1));
  return us;
}

// The phases' steps, priced with their buffers visible to the families.
double phases_us(Plan& p, const PhasedBackwardData& d, const GpuDesc& g) {
  const size_t n = p.buffers.size();
  p.buffers.insert(p.buffers.end(), d.buffers.begin(), d.buffers.end());
  double us = 0;
  for (const Step& st : d.steps)
    us += kernel_estimate_us({p, st, g});
  p.buffers.resize(n);
  return us;
}

// Step i of phase ph as its phases where that applies and pays; i then indexes the last of
// them. Whether it did.
bool try_phases(Plan& p, size_t ph, size_t& i, const GpuDesc& g,
                std::vector<BackwardDataConvDecision>& out) {
  const Step s = p.phases[ph].steps[i];
  std::optional<PhasedBackwardData> phased = phased_backward_data(p, s);
  if (!phased) return false;
  BackwardDataConvDecision d;
  d.node = s.node;
  d.phases = phased->phases;
  d.gather_us = kernel_estimate_us({p, s, g});
  d.conv_us = phases_us(p, *phased, g);
  if (!std::isfinite(d.conv_us) ||
      (std::isfinite(d.gather_us) && !rewrite_pays(d.gather_us, d.conv_us)))
    return true; // applies, does not pay: the gather stays
  p.buffers.insert(p.buffers.end(), phased->buffers.begin(), phased->buffers.end());
  auto& steps = p.phases[ph].steps;
  steps.erase(steps.begin() + long(i));
  steps.insert(steps.begin() + long(i), phased->steps.begin(), phased->steps.end());
  i += phased->steps.size() - 1;
  out.push_back(d);
  return true;
}

// Every step after (ph, i) reads `to` where it read `from`.
void rename_after(Plan& p, size_t ph, size_t i, int from, int to) {
  for (size_t q = ph; q < p.phases.size(); ++q)
    for (size_t j = q == ph ? i + 1 : 0; j < p.phases[q].steps.size(); ++j)
      for (Arg& a : p.phases[q].steps[j].args)
        if (a.buffer == from) a.buffer = to;
}

} // namespace

std::vector<BackwardDataConvDecision> plan_backward_data_as_conv(Plan& p, const GpuDesc& g) {
  std::vector<BackwardDataConvDecision> out;
  if (!p.train) return out;
  for (size_t ph = 0; ph < p.phases.size(); ++ph)
    for (size_t i = 0; i < p.phases[ph].steps.size(); ++i) {
      const Step s = p.phases[ph].steps[i];
      if (s.fn == Fn::conv2d_backward_data && try_phases(p, ph, i, g, out)) continue;
      if (!eligible(p, s)) continue;
      BackwardDataConvDecision d;
      d.node = s.node;
      d.gather_us = kernel_estimate_us({p, s, g});
      d.conv_us = conv_us(p, s, g);
      if (!std::isfinite(d.conv_us) ||
          (std::isfinite(d.gather_us) && !rewrite_pays(d.gather_us, d.conv_us)))
        continue;
      AsConv c = make_conv(p, s);
      p.buffers.push_back(std::move(c.flipped));
      if (s.accumulate) {
        p.buffers.push_back(std::move(c.sum));
        rename_after(p, ph, i, s.need("dx"), int(p.buffers.size()) - 1);
      }
      auto& steps = p.phases[ph].steps;
      steps[i] = std::move(c.conv);
      steps.insert(steps.begin() + long(i), std::move(c.flip));
      ++i;
      out.push_back(d);
    }
  return out;
}

std::vector<BackwardDataConvDecision> plan_transposed_conv_phases(Plan& p, const GpuDesc& g) {
  std::vector<BackwardDataConvDecision> out;
  for (size_t ph = 0; ph < p.phases.size(); ++ph)
    for (size_t i = 0; i < p.phases[ph].steps.size(); ++i)
      if (p.phases[ph].steps[i].fn == Fn::conv_transpose2d_forward) try_phases(p, ph, i, g, out);
  return out;
}

nlohmann::ordered_json backward_data_conv_json(const BackwardDataConvDecision& d) {
  nlohmann::ordered_json j = {
      {"node", d.node}, {"gather_us", us_json(d.gather_us)}, {"conv_us", us_json(d.conv_us)}};
  if (d.phases > 0) j["phases"] = d.phases; // a strided conv's (backward_data_phases.hpp)
  return j;
}

} // namespace kiln
