#include "runtime/layout_order.hpp"

#include <cstring>

namespace kiln {

namespace {

Tensor permute(const Tensor& t, bool to_nhwc) {
  const Shape& s = t.shape();
  const int64_t N = s[0], C = s[1], H = s[2], W = s[3];
  const size_t e = dtype_size(t.dtype());
  Tensor r(t.dtype(), s);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w) {
          const int64_t nchw = ((n * C + c) * H + h) * W + w, nhwc = ((n * H + h) * W + w) * C + c;
          const int64_t from = to_nhwc ? nchw : nhwc, to = to_nhwc ? nhwc : nchw;
          std::memcpy(r.bytes() + to * int64_t(e), t.bytes() + from * int64_t(e), e);
        }
  return r;
}

} // namespace

Tensor to_memory_order(const Tensor& logical, Layout layout) {
  if (layout == Layout::nchw || logical.shape().size() != 4) return logical;
  return permute(logical, true);
}

Tensor to_logical_order(const Tensor& memory, Layout layout) {
  if (layout == Layout::nchw || memory.shape().size() != 4) return memory;
  return permute(memory, false);
}

} // namespace kiln
