#include "generator/tune/key.hpp"

#include "runtime/op_json.hpp"

#include <fmt/format.h>

namespace kiln {

bool tunable(Fn fn) {
  // The in-kernel split-K forms are one kernel each, swept over its tiles like the plain ones;
  // a weight gradient is one kernel too, writing dw or its slices (partial.sum adds those).
  return fn == Fn::conv2d_forward || fn == Fn::linear_forward || fn == Fn::maxpool2d_forward ||
         fn == Fn::avgpool2d_forward || fn == Fn::conv2d_forward_split ||
         fn == Fn::linear_forward_split || fn == Fn::conv2d_backward_weight;
}

TuneKey tune_key(const Plan& p, const Step& s, Layout layout) {
  TuneKey k;
  k.op = std::string(fn_name(s.fn));
  k.layout = std::string(layout_name(layout));
  std::string typed;
  for (const Arg& a : s.args) {
    const Buffer& b = p.buffers[size_t(a.buffer)];
    std::string dims;
    for (int64_t d : b.shape)
      dims += (dims.empty() ? "" : "x") + std::to_string(d);
    k.shape += (k.shape.empty() ? "" : " ") + a.role + "=" + dims;
    typed += fmt::format("{}:{}[{}] ", a.role, dtype_name(b.dtype), dims);
    if (a.role == "y") k.dtype = std::string(dtype_name(b.dtype));
  }
  if (k.dtype.empty() && !s.args.empty())
    k.dtype = std::string(dtype_name(p.buffers[size_t(s.args.back().buffer)].dtype));
  // The activation's kind as it always was, its parameters (clip's bounds) after it.
  const Activation act = s.epilogue.activation;
  const std::string act_id = std::to_string(int(act.kind)) +
                             (activation_params(act).empty() ? "" : ":" + activation_label(act));
  k.id = fmt::format("{}|{}|{}|relu={}|accumulate={}|guard={}|{}", k.op, typed,
                     attrs_to_json(s.op, s.attrs, false).dump(), act_id, int(s.accumulate),
                     guard_name(s.sparse.guard), k.layout);
  return k;
}

} // namespace kiln
