#include "generator/model/param_ranges.hpp"

#include <cmath>

namespace kiln {

namespace {

bool feeds_add(const Model& m, int node) {
  for (const Node& n : m.nodes)
    if (n.op == OpKind::add)
      for (int r : n.inputs)
        if (r == node) return true;
  return false;
}

} // namespace

std::pair<double, double> param_init_range(const Model& m, int node, const ParamSpec& p) {
  const Node& n = m.nodes[node];
  if (n.op == OpKind::conv2d || n.op == OpKind::linear) {
    const Shape w = m.params(node).front().shape; // weight: [out, fan_in...]
    double fan_in = 1;
    for (size_t d = 1; d < w.size(); ++d) fan_in *= double(w[d]);
    const double bound = p.suffix == "weight" ? std::sqrt(6.0 / fan_in) : 1.0 / std::sqrt(fan_in);
    return {-bound, bound};
  }
  if (p.suffix == "weight") return feeds_add(m, node) ? std::pair{0.0, 0.25} : std::pair{0.5, 1.0};
  if (p.suffix == "running_var") return {0.5, 1.5};
  return {-0.1, 0.1}; // batchnorm bias and running_mean
}

} // namespace kiln
