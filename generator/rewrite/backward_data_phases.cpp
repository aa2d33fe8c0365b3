#include "generator/rewrite/backward_data_phases.hpp"

#include "generator/rewrite/fresh_name.hpp"
#include "runtime/ops/conv_transpose2d.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace kiln {

namespace {

// One axis of one phase: dx positions a, a + S, ... (`extent` of them) and their taps.
struct AxisPhase {
  int64_t extent = 0; // dx positions in the phase that some dy position reaches (the first)
  bool cut = false;   // the phase has positions past those (no tap reaches them: zeros)
  int64_t first = 0;  // first tap r
  int64_t taps = 0;   // T
  int64_t pad = 0;    // the phase conv's symmetric padding Q
  int64_t crop = 0;   // phase conv outputs before the first dx position (Q - P)
};

// Axis with dx size `in`, dy size `out`, kernel k, stride s, padding p (before), phase a.
// Returns false where the phase conv would need a padding at or beyond its kernel.
bool axis_phase(int64_t in, int64_t out, int64_t k, int64_t s, int64_t p, int64_t a,
                AxisPhase& ph) {
  ph.extent = a < in ? (in - a + s - 1) / s : 0;
  ph.first = (a + p) % s;
  ph.taps = ph.first < k ? (k - ph.first + s - 1) / s : 0;
  if (ph.extent == 0 || ph.taps == 0) return true;
  // Phase output i reads dy rows i + q - t, t < T: a padding P = T - 1 - q before (negative:
  // row i is the conv's row i - P) and E after, so that the conv yields the rows dy reaches
  // (i <= out - 1 - q + T - 1; the rest, rows no window covered, are zeros). The conv pads Q =
  // max(0, P, E) on both sides, the copy cropping Q - P rows.
  const int64_t q = (a + p) / s;
  const int64_t reached = std::min(ph.extent, out - q + ph.taps - 1);
  ph.cut = reached < ph.extent;
  ph.extent = reached;
  const int64_t before = ph.taps - 1 - q, after = ph.extent - out - before + ph.taps - 1;
  ph.pad = std::max({int64_t(0), before, after});
  ph.crop = ph.pad - before;
  return ph.extent > 0 && ph.pad < ph.taps;
}

} // namespace

std::optional<PhasedBackwardData> phased_backward_data(const Plan& p, const Step& s) {
  // A transposed conv is the data gradient of the conv it transposes, its x that conv's dy.
  const bool transposed = s.fn == Fn::conv_transpose2d_forward;
  if ((s.fn != Fn::conv2d_backward_data && !transposed) || s.kind == StepKind::free)
    return std::nullopt;
  const int dx = s.need(transposed ? "y" : "dx"), dy = s.need(transposed ? "x" : "dy");
  const int w = s.need("w"), bias = transposed ? s.arg("b") : -1;
  const Attrs at = transposed ? transposed_conv(s.attrs, p.buffers[size_t(dy)].shape[1]) : s.attrs;
  if (at.groups != 1 || at.dilation != Int2{1, 1} || at.stride == Int2{1, 1}) return std::nullopt;
  const Buffer& dxb = p.buffers[size_t(dx)];
  const Shape& ws = p.buffers[size_t(w)].shape;
  const Shape& dys = p.buffers[size_t(dy)].shape;
  if (ws.size() != 4 || dxb.shape.size() != 4 || dxb.view_of >= 0) return std::nullopt;
  for (const Buffer& o : p.buffers)
    if (o.view_of == dx) return std::nullopt;
  PhasedBackwardData r;
  const int next = int(p.buffers.size());
  bool uncovered = false; // some phase of dx no tap reaches
  for (int64_t a = 0; a < at.stride[0]; ++a)
    for (int64_t b = 0; b < at.stride[1]; ++b) {
      AxisPhase h, v;
      if (!axis_phase(dxb.shape[2], dys[2], ws[2], at.stride[0], at.padding[0], a, h) ||
          !axis_phase(dxb.shape[3], dys[3], ws[3], at.stride[1], at.padding[1], b, v))
        return std::nullopt;
      if (h.extent == 0 || v.extent == 0) continue; // no dx position
      if (h.taps == 0 || v.taps == 0) {
        uncovered = true;
        continue;
      }
      uncovered |= h.cut || v.cut;
      // The steps carry op conv2d and a conv's attributes (a transposed conv's too: its
      // attributes are another op's), as a conv's gradient steps do.
      const std::string tag = fmt::format(".phase{}x{}", a, b);
      Buffer flipped = p.buffers[size_t(w)];
      // "flip:": weight-like, written in the layout its conv's kernel reads (select.cpp).
      flipped.name = fresh_buffer_name(p, "flip:" + flipped.name + tag);
      flipped.shape = {ws[1], ws[0], h.taps, v.taps};
      flipped.role = BufferRole::activation;
      flipped.view_of = -1, flipped.view_offset = 0, flipped.view_pitch = 0;
      flipped.layout = Layout::nchw;
      Buffer out = dxb;
      out.name = fresh_buffer_name(p, dxb.name + tag);
      out.role = BufferRole::activation;
      out.shape = {dxb.shape[0], dxb.shape[1], dys[2] + 2 * h.pad - h.taps + 1,
                   dys[3] + 2 * v.pad - v.taps + 1};
      const int fi = next + int(r.buffers.size()), oi = fi + 1;
      r.buffers.push_back(std::move(flipped));
      r.buffers.push_back(std::move(out));

      Step flip;
      flip.kind = StepKind::launch;
      flip.fn = Fn::conv2d_flip_weight;
      flip.params = FlipTaps{{h.first, v.first}, at.stride};
      flip.node = s.node, flip.op = OpKind::conv2d;
      flip.args = {{"w", w}, {"w_out", fi}};
      Step conv;
      conv.kind = StepKind::launch;
      conv.fn = Fn::conv2d_forward;
      conv.params = default_params(Fn::conv2d_forward);
      conv.node = s.node, conv.op = OpKind::conv2d;
      conv.attrs = at;
      conv.attrs.out_channels = ws[1];
      conv.attrs.bias = bias >= 0;
      conv.attrs.kernel = {h.taps, v.taps};
      conv.attrs.stride = {1, 1};
      conv.attrs.padding = {h.pad, v.pad};
      conv.attrs.padding_end = {-1, -1};
      conv.args = {{"x", dy}, {"w", fi}, {"y", oi}};
      if (bias >= 0) conv.args.push_back({"b", bias});
      Step copy;
      copy.kind = StepKind::launch;
      copy.fn = Fn::region_copy;
      copy.params = Region{{h.crop, v.crop}, {a, b}, {h.extent, v.extent}, at.stride};
      copy.node = s.node, copy.op = OpKind::conv2d;
      copy.accumulate = s.accumulate;
      copy.args = {{"src", oi}, {"dst", dx}};
      for (Step* st : {&flip, &conv, &copy})
        r.steps.push_back(std::move(*st));
      ++r.phases;
    }
  // A transposed conv's bias where no tap reaches would need a fill of its own.
  if (r.phases == 0 || (uncovered && bias >= 0)) return std::nullopt;
  if (uncovered && !s.accumulate) { // the phases no tap reaches hold zeros
    Step fill;
    fill.kind = StepKind::launch;
    fill.fn = Fn::fill_zero;
    fill.params = default_params(Fn::fill_zero);
    fill.node = s.node, fill.op = OpKind::conv2d;
    fill.args = {{"dst", dx}};
    r.steps.insert(r.steps.begin(), std::move(fill));
  }
  return r;
}

} // namespace kiln
