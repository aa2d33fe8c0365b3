#include "generator/rewrite/layouts.hpp"

#include "generator/lower/steps.hpp"

#include "generator/select/family.hpp"

namespace kiln {

namespace {

bool is_image(const Buffer& b) { return b.shape.size() == 4; }

// The implicit-GEMM family's share of convolution MACs if activations were NHWC.
double nhwc_share(const Plan& p, const GpuDesc& g) {
  Plan trial = p;
  for (Buffer& b : trial.buffers)
    if (is_image(b) && b.role == BufferRole::activation && b.view_of < 0) b.layout = Layout::nhwc;
  double served = 0, total = 0;
  for (const Phase& ph : trial.phases)
    for (const Step& s : ph.steps) {
      if (s.fn != Fn::conv2d_forward) continue;
      const Shape& y = trial.buffers[s.need("y")].shape;
      const Shape& w = trial.buffers[s.need("w")].shape;
      const double macs = double(numel(y)) * double(w[1] * w[2] * w[3]);
      total += macs;
      StepInfo info{trial, s, g};
      for (const Family* f : all_families())
        if (f->name() == "conv2d_implicit_gemm" && !f->candidates(info).empty()) {
          served += macs;
          break;
        }
    }
  return total > 0 ? served / total : 0;
}

} // namespace

Layout choose_layout(const Plan& p, const GpuDesc& g) {
  return nhwc_share(p, g) > 0.5 ? Layout::nhwc : Layout::nchw;
}

int insert_convert(Plan& p, size_t phase, size_t at, int src, Layout layout,
                   const std::string& name) {
  Buffer b = p.buffers[src];
  b.name = name;
  for (int k = 2; p.find_buffer(b.name) >= 0; ++k)
    b.name = name + "#" + std::to_string(k);
  b.role = BufferRole::activation;
  b.view_of = -1;
  b.view_offset = 0;
  b.offset = 0;
  b.layout = layout;
  p.buffers.push_back(b);
  const int dst = int(p.buffers.size()) - 1;
  const Step s = plain_step(Fn::convert, name, {{"src", src}, {"dst", dst}});
  auto& steps = p.phases[phase].steps;
  steps.insert(steps.begin() + long(at), s);
  return dst;
}

void apply_layout(Plan& p, Layout layout) {
  if (layout == Layout::nchw || p.phases.empty()) return;
  const size_t nb = p.buffers.size();
  for (size_t b = 0; b < nb; ++b) {
    Buffer& buf = p.buffers[b];
    if (is_image(buf) && buf.role == BufferRole::activation && buf.view_of < 0) buf.layout = layout;
  }
  auto& steps = p.phases[0].steps;
  // Inputs stay NCHW: a first conv reads them in place (its kernels take x in either
  // layout), so does a folded batch's view of them; kernel choice converts one where the
  // chosen kernel needs it (assign_kernels).
  // Views that reshape an image (flatten) need NCHW order: view a converted copy. A view of
  // the image's own shape (an add's input's gradient: dy itself) reads it in its layout.
  for (size_t v = 0; v < p.buffers.size(); ++v) {
    const int base = p.buffers[v].view_of;
    if (base < 0 || p.buffers[base].layout != layout) continue;
    const Shape& s = p.buffers[base].shape;
    if (p.buffers[v].shape == s && p.buffers[v].view_offset == 0) {
      p.buffers[v].layout = layout;
      continue;
    }
    if (s[2] == 1 && s[3] == 1) continue; // same bytes in either order
    size_t producer = 0;
    for (size_t i = 0; i < steps.size(); ++i)
      for (const Arg& a : steps[i].args)
        if (a.buffer == base) producer = std::max(producer, i); // after its last write
    const int copy =
        insert_convert(p, 0, producer + 1, base, Layout::nchw, p.buffers[base].name + ".nchw");
    p.buffers[v].view_of = copy;
    p.buffers[v].layout = Layout::nchw;
  }
  // Image outputs: the producer writes a transient in `layout`, converted into the output.
  for (int out : p.outputs) {
    const int base = p.base(out);
    if (!is_image(p.buffers[base]) || p.buffers[base].layout == layout) continue;
    for (size_t i = 0; i < steps.size(); ++i) {
      bool writes = false;
      for (Arg& a : steps[i].args)
        if (a.buffer == base && (a.role == "y" || a.role == "dst")) writes = true;
      if (!writes) continue;
      Buffer t = p.buffers[base];
      t.name += "." + std::string(layout_name(layout));
      t.role = BufferRole::activation;
      t.layout = layout;
      p.buffers.push_back(t);
      const int tmp = int(p.buffers.size()) - 1;
      for (Arg& a : steps[i].args)
        if (a.buffer == base) a.buffer = tmp;
      const Step c = plain_step(Fn::convert, p.buffers[base].name, {{"src", tmp}, {"dst", base}});
      steps.insert(steps.begin() + long(i) + 1, c);
      // Later readers of the output read the output (already NCHW) as before.
      break;
    }
  }
}

} // namespace kiln
