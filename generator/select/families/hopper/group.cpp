// The hopper group of template families (see families/groups.hpp).
#include "generator/select/families/groups.hpp"
#include "generator/select/families/hopper/conv_wgmma.hpp"
#include "generator/select/families/hopper/wgrad_wgmma.hpp"

namespace kiln {

std::vector<const Family*> hopper_families() {
  static const HopperConvFamily conv;
  static const HopperWgradFamily wgrad;
  return {&conv, &wgrad};
}

} // namespace kiln
