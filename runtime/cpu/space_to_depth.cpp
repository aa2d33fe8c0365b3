// space_to_depth: y[n, (bh*S + bw)*C + c, i, j] = x[n, c, S*i + bh - PT, S*j + bw - PL] where
// that lies inside x, else 0 (and 0 in channels from S*S*C on). Each x element goes to at most
// one y element, so the backward is a plain gather of that element.
#include "runtime/cpu/detail.hpp"

namespace kiln::cpu {

using detail::need;

namespace {

void space_to_depth_check(const Attrs& a, const Shape& x, const Shape& y, std::string_view op) {
  detail::need_rank(x, 4, op, "input");
  const Shape want = infer_shape(OpKind::space_to_depth, a, std::span<const Shape>(&x, 1));
  need(y == want, op, "output ", shape_str(y), " is not input ", shape_str(x), " rearranged (",
       shape_str(want), ")");
}

} // namespace

template <class T> void space_to_depth(const Attrs& a, CView<T> x, View<T> y) {
  space_to_depth_check(a, x.shape, y.shape, "space_to_depth");
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t CY = y.shape[1], OH = y.shape[2], OW = y.shape[3], S = a.factor;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < CY; ++k) {
      const int64_t bh = k / C / S, bw = k / C % S, c = k % C;
      for (int64_t i = 0; i < OH; ++i) {
        const int64_t h = S * i + bh - a.padding[0];
        for (int64_t j = 0; j < OW; ++j) {
          const int64_t w = S * j + bw - a.padding[1];
          const bool inside = k < S * S * C && h >= 0 && h < H && w >= 0 && w < W;
          y.data[((n * CY + k) * OH + i) * OW + j] =
              inside ? x.data[((n * C + c) * H + h) * W + w] : T(0);
        }
      }
    }
}

template <class T>
void space_to_depth_backward(const Attrs& a, CView<T> dy, View<T> dx, bool accumulate) {
  space_to_depth_check(a, dx.shape, dy.shape, "space_to_depth_backward");
  const int64_t N = dx.shape[0], C = dx.shape[1], H = dx.shape[2], W = dx.shape[3];
  const int64_t CY = dy.shape[1], OH = dy.shape[2], OW = dy.shape[3], S = a.factor;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h) {
        const int64_t ph = h + a.padding[0], i = ph / S, bh = ph % S;
        for (int64_t w = 0; w < W; ++w) {
          const int64_t pw = w + a.padding[1], j = pw / S, bw = pw % S;
          const int64_t k = (bh * S + bw) * C + c;
          const double g = i < OH && j < OW ? double(dy.data[((n * CY + k) * OH + i) * OW + j]) : 0;
          detail::put(dx.data[((n * C + c) * H + h) * W + w], g, accumulate);
        }
      }
}

#define KILN_INSTANTIATE(T)                                                                        \
  template void space_to_depth<T>(const Attrs&, CView<T>, View<T>);                                \
  template void space_to_depth_backward<T>(const Attrs&, CView<T>, View<T>, bool);
KILN_INSTANTIATE(float)
KILN_INSTANTIATE(double)
#undef KILN_INSTANTIATE

} // namespace kiln::cpu
