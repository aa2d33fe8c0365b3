#include "runtime/sparse_form.hpp"

#include "runtime/error.hpp"

namespace kiln {

std::string sparse_form_mismatch(const Shape& x, const Shape& values, const Shape& index,
                                 const Shape& count) {
  if (x.size() != 4) return cat("the compacted tensor must be 4-D, not ", shape_str(x));
  if (values.size() != 3)
    return cat("\"values\" must be [N*H*W, slices, slice], not ", shape_str(values));
  const int64_t cs = values[2];
  if (cs < 1 || cs > kMaxSparseSlice)
    return cat("slice size ", cs, " is outside 1..", kMaxSparseSlice);
  const SparseForm f = SparseForm::of(x, cs);
  if (values != f.values_shape())
    return cat("\"values\" ", shape_str(values), " is not the form of ", shape_str(x),
               " with slices of ", cs, " (", shape_str(f.values_shape()), ")");
  if (index != f.values_shape())
    return cat("\"index\" ", shape_str(index), " must match \"values\" ", shape_str(values));
  if (count != f.count_shape())
    return cat("\"count\" ", shape_str(count), " must be ", shape_str(f.count_shape()));
  return "";
}

} // namespace kiln
