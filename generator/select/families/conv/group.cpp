// The conv group of template families (see families/groups.hpp).
#include "generator/select/families/groups.hpp"

namespace kiln {

std::vector<const Family*> conv_families() { return {}; }

} // namespace kiln
