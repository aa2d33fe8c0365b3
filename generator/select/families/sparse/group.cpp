// The sparse group of template families (see families/groups.hpp).
#include "generator/cost/kernel_cost.hpp"
#include "generator/select/families/groups.hpp"
#include "generator/select/families/sparse/sparse_families.hpp"

namespace kiln {

std::vector<const Family*> sparse_families() {
  static const SparseCompactFamily compact;
  static const SparseConvFamily conv;
  static const SparseBackwardWeightFamily backward_weight;
  static const PartialSumFamily partial_sum;
  return {&compact, &conv, &backward_weight, &partial_sum};
}

double planned_density(const Step& st) {
  return st.sparse.density >= 0 ? std::min(1.0, st.sparse.density) : 0.5;
}

double overlapped_efficiency(const GpuDesc& g, const Variant& v, double compute_efficiency,
                             double memory_efficiency) {
  const Roofline r = roofline(g, v.flops, v.bytes, v.math);
  const double compute = r.compute_us, memory = r.memory_us, floor = r.floor_us();
  const double time = std::max(compute / compute_efficiency, memory / memory_efficiency);
  return time > 0 ? floor / time : compute_efficiency;
}

} // namespace kiln
