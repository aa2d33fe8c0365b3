// The dense group of template families (see families/groups.hpp).
#include "generator/select/families/groups.hpp"

namespace kiln {

std::vector<const Family*> dense_families() { return {}; }

} // namespace kiln
