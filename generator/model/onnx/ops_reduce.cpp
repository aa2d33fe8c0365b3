// ReduceMax over H and W of [N, C, H, W] (a global max pool): kiln's maxpool2d with the
// whole image as its window, then a flatten when keepdims is 0. Axes are an attribute up to
// opset 17 and an input from 18 (with noop_with_empty_axes). Other axes are refused.
#include "generator/model/onnx/node_attrs.hpp"
#include "generator/model/onnx/ops.hpp"
#include "runtime/error.hpp"

#include <algorithm>

namespace kiln::onnx_import {

void convert_reduce_max(Converter& c, const onnx::NodeProto& n) {
  const bool v18 = c.opset >= 18;
  const NodeAttrs at(
      n, v18 ? std::initializer_list<std::string_view>{"keepdims", "noop_with_empty_axes"}
             : std::initializer_list<std::string_view>{"axes", "keepdims"});
  const int x = c.activation(n, 0);
  const Shape s = c.shape_of(x);
  std::vector<int64_t> axes;
  if (!v18)
    axes = at.get_ints("axes").value_or(std::vector<int64_t>{});
  else if (c.has_input(n, 1))
    axes = const_ints(n, c.constant(n, 1, "axes"), "axes");
  if (axes.empty() && v18 && at.get_int("noop_with_empty_axes", 0) != 0)
    throw Error("", node_label(n), "reduces no axis (noop_with_empty_axes): not supported");
  std::vector<int64_t> norm;
  for (int64_t a : axes)
    norm.push_back(a < 0 ? a + int64_t(s.size()) : a);
  std::sort(norm.begin(), norm.end());
  if (s.size() != 4 || norm != std::vector<int64_t>{2, 3}) {
    std::string list;
    for (int64_t a : axes)
      list += (list.empty() ? "" : ", ") + std::to_string(a);
    throw Error("", node_label(n),
                cat("reduces axes [", axes.empty() ? std::string("all") : list, "] of ",
                    shape_str(s),
                    ": kiln imports ReduceMax over H and W of [N, C, H, W] (a global max pool)"));
  }
  Attrs a;
  a.kernel = {s[2], s[3]};
  a.stride = {s[2], s[3]};
  if (at.get_int("keepdims", 1)) {
    c.add_layer(n, OpKind::maxpool2d, a, {x});
    return;
  }
  // [N, C] without the unit axes: the pool, then kiln's flatten under the node's name.
  onnx::NodeProto pool = n;
  pool.set_name(n.name().empty() ? "" : n.name() + ".pool");
  pool.set_output(0, n.output(0) + ".pool");
  const int g = c.add_layer(pool, OpKind::maxpool2d, a, {x});
  c.add_layer(n, OpKind::flatten, {}, {g});
}

} // namespace kiln::onnx_import
