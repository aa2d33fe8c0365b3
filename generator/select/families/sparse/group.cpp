// The sparse group of template families (see families/groups.hpp).
#include "generator/select/families/groups.hpp"
#include "generator/select/families/sparse/sparse_families.hpp"

namespace kiln {

std::vector<const Family*> sparse_families() {
  static const SparseCompactFamily compact;
  static const SparseConvFamily conv;
  static const SparseBackwardWeightFamily backward_weight;
  return {&compact, &conv, &backward_weight};
}

double planned_density(const Step& st) { return st.density >= 0 ? std::min(1.0, st.density) : 0.5; }

} // namespace kiln
