// resize over H, W (nearest or bilinear, runtime/cpu/resize_taps.hpp): y is the taps' weighted
// sum; the backward adds each dy element into the taps it read with their weights, in the
// forward's order (deterministic).
#include "runtime/cpu/detail.hpp"
#include "runtime/cpu/resize_taps.hpp"

#include <vector>

namespace kiln::cpu {

using detail::need;

namespace {

void resize_check(const Attrs& a, const Shape& x, const Shape& y, std::string_view op) {
  detail::need_rank(x, 4, op, "input");
  detail::need_rank(y, 4, op, "output");
  Shape want = infer_shape(OpKind::resize, a, std::span<const Shape>(&x, 1));
  need(y == want, op, "output ", shape_str(y), " is not input ", shape_str(x), " resized (",
       shape_str(want), ")");
}

std::vector<ResizeTaps> axis_taps(const Attrs& a, int axis, int64_t in, int64_t out) {
  std::vector<ResizeTaps> t(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o)
    t[size_t(o)] = resize_taps(a, axis, o, in, out);
  return t;
}

} // namespace

template <class T> void resize(const Attrs& a, CView<T> x, View<T> y) {
  resize_check(a, x.shape, y.shape, "resize");
  const int64_t H = x.shape[2], W = x.shape[3], OH = y.shape[2], OW = y.shape[3];
  const auto th = axis_taps(a, 0, H, OH), tw = axis_taps(a, 1, W, OW);
  for (int64_t nc = 0; nc < x.shape[0] * x.shape[1]; ++nc) {
    const T* xp = x.data + nc * H * W;
    T* yp = y.data + nc * OH * OW;
    for (int64_t oh = 0; oh < OH; ++oh) {
      const ResizeTaps& h = th[size_t(oh)];
      for (int64_t ow = 0; ow < OW; ++ow) {
        const ResizeTaps& w = tw[size_t(ow)];
        const auto row = [&](int64_t i) {
          return w.w0 * double(xp[i * W + w.i0]) + w.w1 * double(xp[i * W + w.i1]);
        };
        yp[oh * OW + ow] = T(h.w0 * row(h.i0) + h.w1 * row(h.i1));
      }
    }
  }
}

template <class T> void resize_backward(const Attrs& a, CView<T> dy, View<T> dx, bool accumulate) {
  resize_check(a, dx.shape, dy.shape, "resize_backward");
  const int64_t H = dx.shape[2], W = dx.shape[3], OH = dy.shape[2], OW = dy.shape[3];
  const auto th = axis_taps(a, 0, H, OH), tw = axis_taps(a, 1, W, OW);
  std::vector<double> acc(size_t(H * W));
  for (int64_t nc = 0; nc < dx.shape[0] * dx.shape[1]; ++nc) {
    std::fill(acc.begin(), acc.end(), 0.0);
    const T* dp = dy.data + nc * OH * OW;
    for (int64_t oh = 0; oh < OH; ++oh) {
      const ResizeTaps& h = th[size_t(oh)];
      for (int64_t ow = 0; ow < OW; ++ow) {
        const ResizeTaps& w = tw[size_t(ow)];
        const double g = double(dp[oh * OW + ow]);
        acc[size_t(h.i0 * W + w.i0)] += g * h.w0 * w.w0;
        acc[size_t(h.i0 * W + w.i1)] += g * h.w0 * w.w1;
        acc[size_t(h.i1 * W + w.i0)] += g * h.w1 * w.w0;
        acc[size_t(h.i1 * W + w.i1)] += g * h.w1 * w.w1;
      }
    }
    T* dxp = dx.data + nc * H * W;
    for (int64_t i = 0; i < H * W; ++i)
      detail::put(dxp[i], acc[size_t(i)], accumulate);
  }
}

#define KILN_INSTANTIATE(T)                                                                        \
  template void resize<T>(const Attrs&, CView<T>, View<T>);                                        \
  template void resize_backward<T>(const Attrs&, CView<T>, View<T>, bool);
KILN_INSTANTIATE(float)
KILN_INSTANTIATE(double)
#undef KILN_INSTANTIATE

} // namespace kiln::cpu
