// The spatial group of template families (see families/groups.hpp).
#include "generator/select/families/groups.hpp"

namespace kiln {

std::vector<const Family*> spatial_families() { return {}; }

} // namespace kiln
