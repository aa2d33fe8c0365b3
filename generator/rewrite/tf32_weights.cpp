#include "generator/rewrite/tf32_weights.hpp"

#include "generator/select/select.hpp"

#include <map>
#include <vector>

namespace kiln {

namespace {

bool is_conv(const Step& s) {
  return s.fn == Fn::conv2d_forward || s.fn == Fn::conv2d_forward_partial ||
         s.fn == Fn::conv2d_forward_split || s.fn == Fn::conv2d_pool_forward;
}

} // namespace

int round_tf32_weights(Plan& p, const GpuDesc& g) {
  if (p.train || g.compute_capability() < 80) return 0;
  // Each buffer's writers and readers (a weight's conversion or folding, its convs).
  std::map<int, std::vector<const Step*>> writers, readers;
  for (const Phase& ph : p.phases)
    for (const Step& s : ph.steps) {
      if (s.kind == StepKind::free) continue;
      for (const Arg& a : s.args)
        (fn_writes(s.fn, a.role) ? writers : readers)[a.buffer].push_back(&s);
    }
  std::vector<int> marked;
  for (const auto& [b, rs] : readers) {
    const Buffer& buf = p.buffers[b];
    if (buf.dtype != DType::f32 || buf.view_of >= 0 || buf.tf32) continue;
    const auto w = writers.find(b);
    if (w == writers.end() || w->second.size() != 1) continue;
    const Step& writer = *w->second[0];
    const bool rounds = (writer.fn == Fn::convert && writer.arg("dst") == b) ||
                        (writer.fn == Fn::conv2d_fold_bn && writer.arg("w_out") == b);
    if (!rounds) continue;
    bool all_tf32 = true;
    for (const Step* r : rs) {
      if (!is_conv(*r) || r->arg("w") != b) {
        all_tf32 = false;
        break;
      }
      const Choice c = select_variant({p, *r, g});
      all_tf32 = c.kernel && c.kernel->variant.math == Math::tf32;
      if (!all_tf32) break;
    }
    if (all_tf32) marked.push_back(b);
  }
  for (int b : marked)
    p.buffers[b].tf32 = true;
  return int(marked.size());
}

} // namespace kiln
