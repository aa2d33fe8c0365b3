// Nearest-neighbour upsampling of [N, C, H, W] by an integer scale: y[oh, ow] = x[oh / s,
// ow / s]; the backward sums each s x s block of dy.
#include "runtime/cpu/detail.hpp"

#include <vector>

namespace kiln::cpu {

using detail::need;

namespace {

int64_t upsample_check(const Attrs& a, const Shape& x, const Shape& y, std::string_view op) {
  detail::need_rank(x, 4, op, "input");
  detail::need_rank(y, 4, op, "output");
  const int64_t s = a.scale;
  need(s > 0 && y[0] == x[0] && y[1] == x[1] && y[2] == x[2] * s && y[3] == x[3] * s, op, "output ",
       shape_str(y), " is not input ", shape_str(x), " scaled by ", s);
  return s;
}

} // namespace

template <class T> void upsample2d(const Attrs& a, CView<T> x, View<T> y) {
  const int64_t s = upsample_check(a, x.shape, y.shape, "upsample2d");
  const int64_t H = x.shape[2], W = x.shape[3], OW = W * s;
  for (int64_t nc = 0; nc < x.shape[0] * x.shape[1]; ++nc)
    for (int64_t h = 0; h < H; ++h) {
      const T* xr = x.data + (nc * H + h) * W;
      T* yr = y.data + (nc * H + h) * s * OW;
      for (int64_t ow = 0; ow < OW; ++ow)
        yr[ow] = xr[ow / s];
      for (int64_t r = 1; r < s; ++r)
        std::copy(yr, yr + OW, yr + r * OW);
    }
}

template <class T>
void upsample2d_backward(const Attrs& a, CView<T> dy, View<T> dx, bool accumulate) {
  const int64_t s = upsample_check(a, dx.shape, dy.shape, "upsample2d_backward");
  const int64_t H = dx.shape[2], W = dx.shape[3], OW = W * s;
  std::vector<double> acc(W);
  for (int64_t nc = 0; nc < dx.shape[0] * dx.shape[1]; ++nc)
    for (int64_t h = 0; h < H; ++h) {
      std::fill(acc.begin(), acc.end(), 0.0);
      // Block order: rows of the block, then columns within each row.
      for (int64_t r = 0; r < s; ++r) {
        const T* dr = dy.data + ((nc * H + h) * s + r) * OW;
        for (int64_t ow = 0; ow < OW; ++ow)
          acc[ow / s] += double(dr[ow]);
      }
      T* dxr = dx.data + (nc * H + h) * W;
      for (int64_t w = 0; w < W; ++w)
        detail::put(dxr[w], acc[w], accumulate);
    }
}

#define KILN_INSTANTIATE(T)                                                                        \
  template void upsample2d<T>(const Attrs&, CView<T>, View<T>);                                    \
  template void upsample2d_backward<T>(const Attrs&, CView<T>, View<T>, bool);
KILN_INSTANTIATE(float)
KILN_INSTANTIATE(double)
#undef KILN_INSTANTIATE

} // namespace kiln::cpu
