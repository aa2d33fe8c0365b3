#include "generator/rewrite/tf32_operands.hpp"

#include "generator/select/select.hpp"

#include <map>
#include <vector>

namespace kiln {

namespace {

bool is_conv(const Step& s) {
  return s.fn == Fn::conv2d_forward || s.fn == Fn::conv2d_forward_partial ||
         s.fn == Fn::conv2d_forward_split || s.fn == Fn::conv2d_pool_forward;
}

// The families whose kernels read rounded operands (A_TF32, B_TF32) and round their output
// (Y_TF32).
bool takes_rounded(const Choice& c) {
  return c.kernel && c.kernel->variant.math == Math::tf32 &&
         (c.kernel->variant.family == "conv2d_implicit_gemm" ||
          c.kernel->variant.family == "conv2d_hopper_wgmma");
}

} // namespace

Tf32Operands round_tf32_operands(Plan& p, const GpuDesc& g) {
  Tf32Operands out;
  if (p.train || g.compute_capability() < 80) return out;
  // Each buffer's writers and readers, and which are held otherwise (views, plan outputs).
  std::map<int, std::vector<const Step*>> writers, readers;
  for (const Phase& ph : p.phases)
    for (const Step& s : ph.steps) {
      if (s.kind == StepKind::free) continue;
      for (const Arg& a : s.args)
        (fn_writes(s.fn, a.role) ? writers : readers)[a.buffer].push_back(&s);
    }
  std::vector<char> held(p.buffers.size(), 0);
  for (const Buffer& b : p.buffers)
    if (b.view_of >= 0) held[size_t(b.view_of)] = 1;
  for (int o : p.outputs)
    held[size_t(o)] = 1;
  std::map<const Step*, bool> tf32_reader; // a conv's probe: a tf32 kernel taking rounded x, w
  const auto rounded_reader = [&](const Step* r) {
    auto [it, fresh] = tf32_reader.emplace(r, false);
    if (fresh) it->second = is_conv(*r) && takes_rounded(select_variant({p, *r, g}));
    return it->second;
  };
  std::vector<int> marked;
  for (const auto& [b, rs] : readers) {
    const Buffer& buf = p.buffers[size_t(b)];
    if (buf.dtype != DType::f32 || buf.view_of >= 0 || buf.tf32 || held[size_t(b)]) continue;
    const auto w = writers.find(b);
    if (w == writers.end() || w->second.size() != 1) continue;
    const Step& writer = *w->second[0];
    const bool weight = (writer.fn == Fn::convert && writer.arg("dst") == b) ||
                        (writer.fn == Fn::conv2d_fold_bn && writer.arg("w_out") == b);
    // An activation: a conv's fused epilogue writes it (not split-K's raw slices).
    const bool activation = buf.role == BufferRole::activation && is_conv(writer) &&
                            writer.fn != Fn::conv2d_forward_partial && writer.arg("y") == b &&
                            !writer.accumulate && writer.arg("y_values") < 0 &&
                            rounded_reader(&writer);
    if (!weight && !activation) continue;
    bool all = true;
    for (const Step* r : rs)
      all = all && is_conv(*r) && r->arg(weight ? "w" : "x") == b &&
            (weight || r->arg("gate") < 0) && rounded_reader(r);
    if (!all) continue;
    marked.push_back(b);
    ++(weight ? out.weights : out.activations);
  }
  for (int b : marked)
    p.buffers[size_t(b)].tf32 = true;
  return out;
}

} // namespace kiln
