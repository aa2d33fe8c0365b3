// The igemm group of template families (see families/groups.hpp).
#include "generator/select/families/groups.hpp"
#include "generator/select/families/igemm/implicit_gemm.hpp"

namespace kiln {

std::vector<const Family*> implicit_gemm_families() {
  static const ImplicitGemmFamily implicit_gemm;
  return {&implicit_gemm};
}

} // namespace kiln
