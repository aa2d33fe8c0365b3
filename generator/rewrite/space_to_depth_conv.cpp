#include "generator/rewrite/space_to_depth_conv.hpp"

#include "generator/cost/rewrite_pays.hpp"
#include "generator/rewrite/fresh_name.hpp"
#include "generator/rewrite/us_json.hpp"
#include "generator/select/select.hpp"

#include <cmath>

namespace kiln {

namespace {

// z's channels: S S C rounded up to 16 (one 32-byte swizzle row of 16-bit types, the
// 16-byte vectors of the implicit GEMM's loads).
constexpr int64_t kChannelAlign = 16;
// Only few channels gain: the stems' 3 (a GEMM over K = 147 with loads that cannot be
// vectorised); past that the zero taps of w' cost more than the gather saves.
constexpr int64_t kMaxBlockChannels = 64;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

} // namespace

std::optional<SpaceToDepthConv> space_to_depth_conv(const Plan& p, const Step& s) {
  if (s.fn != Fn::conv2d_forward || s.kind == StepKind::free || s.accumulate) return std::nullopt;
  const Attrs& a = s.attrs;
  const int xi = s.need("x"), wi = s.need("w"), yi = s.need("y");
  const Buffer &x = p.buffers[size_t(xi)], &w = p.buffers[size_t(wi)], &y = p.buffers[size_t(yi)];
  if (x.shape.size() != 4 || w.shape.size() != 4 || y.shape.size() != 4) return std::nullopt;
  const int64_t S = a.stride[0], K = w.shape[2], C = x.shape[1], P = a.padding[0];
  if (a.groups != 1 || a.dilation != Int2{1, 1} || a.stride[1] != S || S < 2 || w.shape[3] != K ||
      K < S || a.padding[1] != P || (a.padding_end != Int2{-1, -1} && a.padding_end != a.padding) ||
      S * S * C > kMaxBlockChannels || x.view_pitch > 0)
    return std::nullopt;
  const int64_t A = P / S, f = P % S, KA = ceil_div(K, S);
  const int64_t cz = ceil_div(S * S * C, kChannelAlign) * kChannelAlign;
  // z's rows: as many as a stride-1 conv with padding A needs for y's rows; the A block rows
  // past them, read as that padding, must lie past x (S Hz - f >= H). Its columns: the same,
  // and the A columns of padding on each side written as zeros, so that the conv is unpadded
  // across: a row of its KA taps' channels is then KA consecutive pixels of z (the Hopper
  // family's folded taps, conv_wgmma.cpp).
  const int64_t hz = y.shape[2] + KA - 1 - 2 * A, wz = y.shape[3] + KA - 1 - 2 * A;
  if (A >= KA || hz < 1 || wz < 1 ||
      (A > 0 && (S * hz - f < x.shape[2] || S * wz - f < x.shape[3])))
    return std::nullopt;

  SpaceToDepthConv r;
  r.kernel = KA;
  r.channels = cz;
  const int wz_i = int(p.buffers.size()), z_i = wz_i + 1;
  Buffer wb = w;
  wb.name = fresh_buffer_name(p, "s2d:" + w.name);
  wb.shape = {w.shape[0], cz, KA, KA};
  wb.role = BufferRole::activation;
  wb.view_of = -1, wb.view_offset = 0, wb.view_pitch = 0;
  wb.layout = Layout::nchw; // written in the layout its conv's kernel reads (assign_kernels)
  wb.tf32 = false;
  Buffer zb = x;
  zb.name = fresh_buffer_name(p, x.name + ".s2d");
  zb.shape = {x.shape[0], cz, hz, wz + 2 * A};
  zb.role = BufferRole::activation;
  zb.view_of = -1, zb.view_offset = 0, zb.view_pitch = 0;
  zb.layout = y.layout; // the conv's: NHWC where the plan is
  zb.tf32 = false;
  r.buffers = {wb, zb};

  auto s2d = [&](int in, int out, Int2 pad, Int2 size) {
    Step t;
    t.kind = StepKind::launch;
    t.fn = Fn::space_to_depth_forward;
    t.params = default_params(Fn::space_to_depth_forward);
    t.node = s.node;
    t.op = OpKind::space_to_depth;
    t.attrs.factor = S;
    t.attrs.padding = pad;
    t.attrs.size = size;
    t.attrs.out_channels = cz;
    t.args = {{"x", in}, {"y", out}};
    return t;
  };
  r.steps.push_back(s2d(wi, wz_i, {0, 0}, {KA, KA}));
  r.steps.push_back(s2d(xi, z_i, {f, f + S * A}, {hz, wz + 2 * A}));
  Step conv = s; // its epilogue, bias and residual as they were
  conv.attrs.kernel = {KA, KA};
  conv.attrs.stride = {1, 1};
  conv.attrs.padding = {A, 0};
  conv.attrs.padding_end = {-1, -1};
  for (Arg& g : conv.args)
    if (g.role == "x")
      g.buffer = z_i;
    else if (g.role == "w")
      g.buffer = wz_i;
  r.steps.push_back(std::move(conv));
  return r;
}

std::vector<SpaceToDepthDecision> plan_space_to_depth_convs(Plan& p, const GpuDesc& g) {
  std::vector<SpaceToDepthDecision> out;
  if (p.train) return out;
  for (Phase& phase : p.phases)
    for (size_t i = 0; i < phase.steps.size(); ++i) {
      const Step s = phase.steps[i];
      std::optional<SpaceToDepthConv> r = space_to_depth_conv(p, s);
      if (!r) continue;
      SpaceToDepthDecision d;
      d.node = s.node;
      d.kernel = r->kernel;
      d.channels = r->channels;
      d.conv_us = kernel_estimate_us({p, s, g});
      const size_t n = p.buffers.size();
      p.buffers.insert(p.buffers.end(), r->buffers.begin(), r->buffers.end());
      d.after_us =
          kernel_estimate_us({p, r->steps[1], g}) + kernel_estimate_us({p, r->steps[2], g});
      if (!std::isfinite(d.after_us) ||
          (std::isfinite(d.conv_us) && !rewrite_pays(d.conv_us, d.after_us))) {
        p.buffers.resize(n);
        continue;
      }
      phase.steps.erase(phase.steps.begin() + long(i));
      phase.steps.insert(phase.steps.begin() + long(i), r->steps.begin(), r->steps.end());
      i += r->steps.size() - 1;
      out.push_back(d);
    }
  return out;
}

nlohmann::ordered_json space_to_depth_json(const SpaceToDepthDecision& d) {
  return {{"node", d.node},
          {"conv_us", us_json(d.conv_us)},
          {"after_us", us_json(d.after_us)},
          {"kernel", d.kernel},
          {"channels", d.channels}};
}

} // namespace kiln
