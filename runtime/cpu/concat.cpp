// Channel-axis concatenation of [N, C_i, *spatial] inputs and its backward (a channel slice).
#include "runtime/cpu/detail.hpp"

namespace kiln::cpu {

using detail::need;

namespace {

// Inputs must match the output in every axis but 1.
void need_fits(const Shape& x, const Shape& y, std::string_view op) {
  bool ok = x.size() == y.size() && x.size() >= 2 && x[0] == y[0];
  for (size_t d = 2; ok && d < x.size(); ++d)
    ok = x[d] == y[d];
  need(ok, op, "input ", shape_str(x), " does not fit output ", shape_str(y),
       " outside the channel axis");
}

} // namespace

template <class T> void concat(std::span<const CView<T>> xs, View<T> y) {
  int64_t channels = 0;
  for (const CView<T>& x : xs) {
    need_fits(x.shape, y.shape, "concat");
    channels += x.shape[1];
  }
  need(channels == y.shape[1], "concat", "inputs have ", channels, " channels, output ",
       shape_str(y.shape));
  const int64_t N = y.shape[0], S = detail::inner_size(y.shape, 2);
  for (int64_t n = 0; n < N; ++n) {
    T* yp = y.data + n * y.shape[1] * S;
    for (const CView<T>& x : xs) {
      const int64_t block = x.shape[1] * S;
      std::copy(x.data + n * block, x.data + (n + 1) * block, yp);
      yp += block;
    }
  }
}

template <class T>
void concat_backward(CView<T> dy, int64_t channel_offset, View<T> dx, bool accumulate) {
  need_fits(dx.shape, dy.shape, "concat_backward");
  const int64_t C = dy.shape[1], Ci = dx.shape[1];
  need(channel_offset >= 0 && channel_offset + Ci <= C, "concat_backward", "channels [",
       channel_offset, ", ", channel_offset + Ci, ") are outside dy ", shape_str(dy.shape));
  const int64_t N = dy.shape[0], S = detail::inner_size(dy.shape, 2), block = Ci * S;
  for (int64_t n = 0; n < N; ++n) {
    const T* src = dy.data + (n * C + channel_offset) * S;
    T* dst = dx.data + n * block;
    for (int64_t i = 0; i < block; ++i)
      detail::put(dst[i], double(src[i]), accumulate);
  }
}

#define KILN_INSTANTIATE(T)                                                                        \
  template void concat<T>(std::span<const CView<T>>, View<T>);                                     \
  template void concat_backward<T>(CView<T>, int64_t, View<T>, bool);
KILN_INSTANTIATE(float)
KILN_INSTANTIATE(double)
#undef KILN_INSTANTIATE

} // namespace kiln::cpu
