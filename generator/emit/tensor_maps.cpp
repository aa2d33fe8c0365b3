#include "generator/emit/tensor_maps.hpp"

#include "generator/select/families/hopper/tensor_map_binding.hpp"

namespace kiln {

int insert_tensor_maps(Plan& p, const Assigned& assigned) {
  TensorMapBinder binder(p);
  for (Phase& ph : p.phases)
    for (Step& s : ph.steps)
      if (s.kind == StepKind::launch && s.kernel >= 0)
        binder.bind(s, assigned.kernels[size_t(s.kernel)].variant);
  return binder.finish();
}

} // namespace kiln
