// Channel moves: shuffle and slice. Pure data movement, exact in any type.
#include "runtime/cpu/detail.hpp"

namespace kiln::cpu {

using detail::need;
using detail::put;

template <class T> void channel_shuffle(int64_t groups, CView<T> x, View<T> y, bool accumulate) {
  detail::need_same(x.shape, y.shape, "channel_shuffle", "x", "y");
  const int64_t n = x.shape[0], c = x.shape[1], s = detail::inner_size(x.shape, 2);
  need(groups >= 1 && c % groups == 0, "channel_shuffle", groups, " groups do not divide ", c,
       " channels");
  const int64_t per = c / groups;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t j = 0; j < c; ++j) {
      const int64_t src = (j % groups) * per + j / groups;
      const T* from = x.data + (b * c + src) * s;
      T* to = y.data + (b * c + j) * s;
      for (int64_t k = 0; k < s; ++k)
        put(to[k], double(from[k]), accumulate);
    }
}

template <class T> void channel_slice(int64_t begin, CView<T> x, View<T> y) {
  const int64_t n = x.shape[0], c = x.shape[1], cy = y.shape[1];
  const int64_t s = detail::inner_size(x.shape, 2);
  need(y.shape[0] == n && detail::inner_size(y.shape, 2) == s && begin >= 0 && begin + cy <= c,
       "channel_slice", "y ", shape_str(y.shape), " is not channels from ", begin, " of x ",
       shape_str(x.shape));
  for (int64_t b = 0; b < n; ++b)
    std::copy_n(x.data + (b * c + begin) * s, cy * s, y.data + b * cy * s);
}

template <class T>
void channel_slice_backward(int64_t begin, CView<T> dy, View<T> dx, bool accumulate) {
  const int64_t n = dx.shape[0], c = dx.shape[1], cy = dy.shape[1];
  const int64_t s = detail::inner_size(dx.shape, 2);
  need(dy.shape[0] == n && detail::inner_size(dy.shape, 2) == s && begin >= 0 && begin + cy <= c,
       "channel_slice.backward", "dy ", shape_str(dy.shape), " is not channels from ", begin,
       " of dx ", shape_str(dx.shape));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t j = 0; j < c; ++j) {
      T* to = dx.data + (b * c + j) * s;
      const bool inside = j >= begin && j < begin + cy;
      if (!inside) {
        if (!accumulate) std::fill_n(to, s, T(0));
        continue;
      }
      const T* from = dy.data + (b * cy + j - begin) * s;
      for (int64_t k = 0; k < s; ++k)
        put(to[k], double(from[k]), accumulate);
    }
}

#define KILN_INSTANTIATE(T)                                                                        \
  template void channel_shuffle<T>(int64_t, CView<T>, View<T>, bool);                              \
  template void channel_slice<T>(int64_t, CView<T>, View<T>);                                      \
  template void channel_slice_backward<T>(int64_t, CView<T>, View<T>, bool);
KILN_INSTANTIATE(float)
KILN_INSTANTIATE(double)
#undef KILN_INSTANTIATE

} // namespace kiln::cpu
