// The registry of template families, in selection tie-break order.
#include "generator/select/families/elementwise.hpp"
#include "generator/select/family.hpp"

namespace kiln {

const std::vector<const Family*>& all_families() {
  static const ElementwiseFamily elementwise;
  static const ConvertFamily convert;
  static const std::vector<const Family*> all = {&elementwise, &convert};
  return all;
}

} // namespace kiln
