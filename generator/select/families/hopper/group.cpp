// The hopper group of template families (see families/groups.hpp).
#include "generator/select/families/groups.hpp"
#include "generator/select/families/hopper/conv_wgmma.hpp"

namespace kiln {

std::vector<const Family*> hopper_families() {
  static const HopperConvFamily conv;
  return {&conv};
}

} // namespace kiln
