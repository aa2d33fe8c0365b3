// pad over H, W: y[oh, ow] = x at the source of (oh - top, ow - left): inside the input
// itself; outside, the constant (constant), the mirror image without the edge row (reflect)
// or the edge row (edge). The backward adds each dy element into its source, in y's order.
#include "runtime/cpu/detail.hpp"

#include <vector>

namespace kiln::cpu {

using detail::need;

namespace {

void pad_check(const Attrs& a, const Shape& x, const Shape& y, std::string_view op) {
  detail::need_rank(x, 4, op, "input");
  const Shape want = infer_shape(OpKind::pad, a, std::span<const Shape>(&x, 1));
  need(y == want, op, "output ", shape_str(y), " is not input ", shape_str(x), " padded (",
       shape_str(want), ")");
}

// The source of output o along an axis of `in` with `before` padding; -1: the constant.
int64_t source(PadMode m, int64_t o, int64_t before, int64_t in) {
  int64_t i = o - before;
  if (i >= 0 && i < in) return i;
  if (m == PadMode::constant) return -1;
  if (m == PadMode::edge) return i < 0 ? 0 : in - 1;
  return i < 0 ? -i : 2 * (in - 1) - i; // reflect (the shape rule keeps padding < in)
}

} // namespace

template <class T> void pad(const Attrs& a, CView<T> x, View<T> y) {
  pad_check(a, x.shape, y.shape, "pad");
  const PadMode m = PadMode(a.mode);
  const int64_t H = x.shape[2], W = x.shape[3], OH = y.shape[2], OW = y.shape[3];
  for (int64_t nc = 0; nc < x.shape[0] * x.shape[1]; ++nc)
    for (int64_t oh = 0; oh < OH; ++oh) {
      const int64_t ih = source(m, oh, a.padding[0], H);
      for (int64_t ow = 0; ow < OW; ++ow) {
        const int64_t iw = source(m, ow, a.padding[1], W);
        y.data[(nc * OH + oh) * OW + ow] =
            ih < 0 || iw < 0 ? T(a.value) : x.data[(nc * H + ih) * W + iw];
      }
    }
}

template <class T> void pad_backward(const Attrs& a, CView<T> dy, View<T> dx, bool accumulate) {
  pad_check(a, dx.shape, dy.shape, "pad_backward");
  const PadMode m = PadMode(a.mode);
  const int64_t H = dx.shape[2], W = dx.shape[3], OH = dy.shape[2], OW = dy.shape[3];
  std::vector<double> acc(size_t(H * W));
  for (int64_t nc = 0; nc < dx.shape[0] * dx.shape[1]; ++nc) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t oh = 0; oh < OH; ++oh) {
      const int64_t ih = source(m, oh, a.padding[0], H);
      for (int64_t ow = 0; ow < OW; ++ow) {
        const int64_t iw = source(m, ow, a.padding[1], W);
        if (ih >= 0 && iw >= 0)
          acc[size_t(ih * W + iw)] += double(dy.data[(nc * OH + oh) * OW + ow]);
      }
    }
    for (int64_t i = 0; i < H * W; ++i)
      detail::put(dx.data[nc * H * W + i], acc[size_t(i)], accumulate);
  }
}

#define KILN_INSTANTIATE(T)                                                                        \
  template void pad<T>(const Attrs&, CView<T>, View<T>);                                           \
  template void pad_backward<T>(const Attrs&, CView<T>, View<T>, bool);
KILN_INSTANTIATE(float)
KILN_INSTANTIATE(double)
#undef KILN_INSTANTIATE

} // namespace kiln::cpu
