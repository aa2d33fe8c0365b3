#include "generator/select/library_layouts.hpp"

#include "runtime/step_fn.hpp"

namespace kiln {

Variant library_layouts(const Plan& p, const Step& s) {
  Variant v;
  if (s.fn == Fn::convert) return v; // changes the layout: cudnnTransformTensor
  int written = -1;
  for (std::string_view w : fn_signature(s.fn).writes)
    if (const int b = s.arg(w); written < 0 && b >= 0 && p.buffers[b].shape.size() == 4)
      written = b;
  if (written < 0) return v;
  for (const Arg& a : s.args)
    if (p.buffers[a.buffer].shape.size() == 4)
      v.layouts.push_back({a.role, p.buffers[written].layout});
  return v;
}

} // namespace kiln
