#include "generator/cost/fold_roofline.hpp"

#include "generator/cost/roofline.hpp"
#include "generator/model/fold.hpp"

namespace kiln {

FoldRoofline fold_roofline(const Model& src, const GpuDesc& g, int64_t f) {
  Model m = src;
  if (f > 1) m = fold_model(src, FoldOptions{f, std::nullopt});
  FoldRoofline r;
  r.factor = f;
  r.batch = m.input_shape[0];
  const double esize = double(dtype_size(m.dtype)), images = double(r.batch);
  const Math math = layer_math(m.dtype, g);
  r.total.name = "total";
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    const Node& n = m.nodes[i];
    if (op_is_view(n.op)) continue;
    double elems = double(numel(n.shape));
    for (const Shape& s : m.input_shapes(int(i)))
      elems += double(numel(s));
    for (const ParamSpec& p : m.params(int(i)))
      elems += double(numel(p.shape));
    FoldRoofline::Row row{n.name, std::string(op_name(n.op)),
                          double(thop_flops(m, int(i))) / images, elems * esize / images, 0};
    row.us = roofline(g, row.flops, row.bytes, math).floor_us();
    r.total.flops += row.flops;
    r.total.bytes += row.bytes;
    r.total.us += row.us;
    r.rows.push_back(row);
  }
  return r;
}

} // namespace kiln
