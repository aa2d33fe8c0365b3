#include "runtime/fold_batch.hpp"

#include "runtime/error.hpp"

#include <cstring>

namespace kiln {

int64_t plan_fold_factor(const Plan& p) {
  if (p.inputs.empty()) return 1;
  const Buffer& in = p.buffers[p.inputs[0]];
  if (in.shape.size() != 4) return 1;
  for (const Buffer& b : p.buffers)
    if (b.view_of == p.inputs[0] && b.shape.size() == 4 && b.shape[0] < in.shape[0] &&
        in.shape[0] % b.shape[0] == 0 && b.shape[1] == in.shape[1] * (in.shape[0] / b.shape[0]) &&
        b.shape[2] == in.shape[2] && b.shape[3] == in.shape[3])
      return in.shape[0] / b.shape[0];
  return 1;
}

Tensor pad_batch(const Tensor& x, int64_t batch) {
  const int64_t n = x.shape().at(0);
  if (batch < n) throw Error(cat("cannot pad ", n, " images to a batch of ", batch));
  Shape s = x.shape();
  s[0] = batch;
  Tensor t(x.dtype(), s); // zeros
  std::memcpy(t.bytes(), x.bytes(), x.nbytes());
  return t;
}

Tensor first_rows(const Tensor& y, int64_t n) {
  if (y.shape().empty() || y.shape()[0] < n) throw Error(cat("cannot take ", n, " rows of ", shape_str(y.shape())));
  Shape s = y.shape();
  s[0] = n;
  Tensor t(y.dtype(), s);
  std::memcpy(t.bytes(), y.bytes(), t.nbytes());
  return t;
}

} // namespace kiln
