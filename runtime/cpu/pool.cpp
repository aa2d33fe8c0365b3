// Pooling over [N, C, H, W]: max, average and adaptive average, forward and backward, with
// PyTorch's window rules (padding, ceil_mode, count_include_pad, adaptive windows).
#include "runtime/cpu/detail.hpp"

#include <cmath>
#include <limits>
#include <vector>

namespace kiln::cpu {

namespace {

using detail::need;
using detail::put;

struct PoolGeo {
  int64_t N, C, H, W, OH, OW;
};

PoolGeo pool_shapes(const Shape& x, const Shape& y, std::string_view op) {
  detail::need_rank(x, 4, op, "input");
  detail::need_rank(y, 4, op, "output");
  need(x[0] == y[0] && x[1] == y[1], op, "input ", shape_str(x), " and output ", shape_str(y),
       " differ in batch or channels");
  return {x[0], x[1], x[2], x[3], y[2], y[3]};
}

PoolGeo pool_geo(const Attrs& a, const Shape& x, const Shape& y, std::string_view op) {
  const PoolGeo g = pool_shapes(x, y, op);
  need(a.kernel[0] > 0 && a.kernel[1] > 0 && a.stride[0] > 0 && a.stride[1] > 0 &&
           a.padding[0] >= 0 && a.padding[1] >= 0,
       op, "kernel and stride must be positive, padding not negative");
  const Int2 pe = padding_end(a);
  need(g.OH == window_out(g.H, a.kernel[0], a.stride[0], a.padding[0], pe[0], 1, a.ceil_mode) &&
           g.OW == window_out(g.W, a.kernel[1], a.stride[1], a.padding[1], pe[1], 1, a.ceil_mode),
       op, "output ", shape_str(y), " does not match input ", shape_str(x));
  return g;
}

// One axis of a pooling window: [lo, hi) clipped to the input, and the extent PyTorch's
// count_include_pad divisor uses (clipped to the padded input only).
struct Span {
  int64_t lo, hi, padded;
};
Span window(int64_t o, int64_t k, int64_t s, int64_t p, int64_t p_end, int64_t in) {
  const int64_t start = o * s - p;
  const int64_t end = std::min(start + k, in + p_end);
  return {std::max<int64_t>(start, 0), std::min(end, in), end - start};
}

// Flat index (ih * W + iw) of the window's maximum: the first in row-major order, except that
// a NaN wins (the last NaN), as PyTorch's kernel does. -1 for a window with no input element.
template <class T> int64_t argmax(const T* xp, int64_t W, const Span& h, const Span& w) {
  int64_t best_i = h.lo < h.hi && w.lo < w.hi ? h.lo * W + w.lo : -1;
  T best = -std::numeric_limits<T>::infinity();
  for (int64_t ih = h.lo; ih < h.hi; ++ih)
    for (int64_t iw = w.lo; iw < w.hi; ++iw) {
      const T v = xp[ih * W + iw];
      if (v > best || std::isnan(v))
        best = v, best_i = ih * W + iw;
    }
  return best_i;
}

} // namespace

template <class T> void maxpool2d(const Attrs& a, CView<T> x, View<T> y) {
  const PoolGeo g = pool_geo(a, x.shape, y.shape, "maxpool2d");
  for (int64_t nc = 0; nc < g.N * g.C; ++nc) {
    const T* xp = x.data + nc * g.H * g.W;
    T* yp = y.data + nc * g.OH * g.OW;
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      const Span h = window(oh, a.kernel[0], a.stride[0], a.padding[0], padding_end(a)[0], g.H);
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        const Span w = window(ow, a.kernel[1], a.stride[1], a.padding[1], padding_end(a)[1], g.W);
        const int64_t i = argmax(xp, g.W, h, w);
        yp[oh * g.OW + ow] = i < 0 ? -std::numeric_limits<T>::infinity() : xp[i];
      }
    }
  }
}

template <class T>
void maxpool2d_backward(const Attrs& a, CView<T> x, CView<T> dy, View<T> dx, bool accumulate) {
  const PoolGeo g = pool_geo(a, x.shape, dy.shape, "maxpool2d_backward");
  detail::need_same(x.shape, dx.shape, "maxpool2d_backward", "input", "dx");
  std::vector<double> acc(g.H * g.W);
  for (int64_t nc = 0; nc < g.N * g.C; ++nc) {
    std::fill(acc.begin(), acc.end(), 0.0);
    const T* xp = x.data + nc * g.H * g.W;
    const T* dyp = dy.data + nc * g.OH * g.OW;
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      const Span h = window(oh, a.kernel[0], a.stride[0], a.padding[0], padding_end(a)[0], g.H);
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        const Span w = window(ow, a.kernel[1], a.stride[1], a.padding[1], padding_end(a)[1], g.W);
        const int64_t i = argmax(xp, g.W, h, w);
        if (i >= 0)
          acc[i] += double(dyp[oh * g.OW + ow]);
      }
    }
    T* dxp = dx.data + nc * g.H * g.W;
    for (int64_t i = 0; i < g.H * g.W; ++i)
      put(dxp[i], acc[i], accumulate);
  }
}

namespace {

// PyTorch: the divisor is the window clipped to the padded input when count_include_pad,
// else the number of input elements in it.
double divisor(const Attrs& a, const Span& h, const Span& w) {
  return a.count_include_pad ? double(h.padded * w.padded) : double((h.hi - h.lo) * (w.hi - w.lo));
}

} // namespace

template <class T> void avgpool2d(const Attrs& a, CView<T> x, View<T> y) {
  const PoolGeo g = pool_geo(a, x.shape, y.shape, "avgpool2d");
  for (int64_t nc = 0; nc < g.N * g.C; ++nc) {
    const T* xp = x.data + nc * g.H * g.W;
    T* yp = y.data + nc * g.OH * g.OW;
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      const Span h = window(oh, a.kernel[0], a.stride[0], a.padding[0], padding_end(a)[0], g.H);
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        const Span w = window(ow, a.kernel[1], a.stride[1], a.padding[1], padding_end(a)[1], g.W);
        double s = 0;
        for (int64_t ih = h.lo; ih < h.hi; ++ih)
          for (int64_t iw = w.lo; iw < w.hi; ++iw)
            s += double(xp[ih * g.W + iw]);
        // An empty window (unreachable with PyTorch's padding limit) gives 0, as PyTorch.
        const bool empty = h.lo >= h.hi || w.lo >= w.hi;
        yp[oh * g.OW + ow] = empty ? T(0) : T(s / divisor(a, h, w));
      }
    }
  }
}

template <class T>
void avgpool2d_backward(const Attrs& a, CView<T> dy, View<T> dx, bool accumulate) {
  const PoolGeo g = pool_geo(a, dx.shape, dy.shape, "avgpool2d_backward");
  std::vector<double> acc(g.H * g.W);
  for (int64_t nc = 0; nc < g.N * g.C; ++nc) {
    std::fill(acc.begin(), acc.end(), 0.0);
    const T* dyp = dy.data + nc * g.OH * g.OW;
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      const Span h = window(oh, a.kernel[0], a.stride[0], a.padding[0], padding_end(a)[0], g.H);
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        const Span w = window(ow, a.kernel[1], a.stride[1], a.padding[1], padding_end(a)[1], g.W);
        const double d = double(dyp[oh * g.OW + ow]) / divisor(a, h, w);
        for (int64_t ih = h.lo; ih < h.hi; ++ih)
          for (int64_t iw = w.lo; iw < w.hi; ++iw)
            acc[ih * g.W + iw] += d;
      }
    }
    T* dxp = dx.data + nc * g.H * g.W;
    for (int64_t i = 0; i < g.H * g.W; ++i)
      put(dxp[i], acc[i], accumulate);
  }
}

template <class T> void adaptive_avgpool2d(CView<T> x, View<T> y) {
  const PoolGeo g = pool_shapes(x.shape, y.shape, "adaptive_avgpool2d");
  for (int64_t nc = 0; nc < g.N * g.C; ++nc) {
    const T* xp = x.data + nc * g.H * g.W;
    T* yp = y.data + nc * g.OH * g.OW;
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      const int64_t h0 = adaptive_begin(oh, g.H, g.OH), h1 = adaptive_end(oh, g.H, g.OH);
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        const int64_t w0 = adaptive_begin(ow, g.W, g.OW), w1 = adaptive_end(ow, g.W, g.OW);
        double s = 0;
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw)
            s += double(xp[ih * g.W + iw]);
        yp[oh * g.OW + ow] = T(s / double((h1 - h0) * (w1 - w0)));
      }
    }
  }
}

template <class T> void adaptive_avgpool2d_backward(CView<T> dy, View<T> dx, bool accumulate) {
  const PoolGeo g = pool_shapes(dx.shape, dy.shape, "adaptive_avgpool2d_backward");
  std::vector<double> acc(g.H * g.W);
  for (int64_t nc = 0; nc < g.N * g.C; ++nc) {
    std::fill(acc.begin(), acc.end(), 0.0);
    const T* dyp = dy.data + nc * g.OH * g.OW;
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      const int64_t h0 = adaptive_begin(oh, g.H, g.OH), h1 = adaptive_end(oh, g.H, g.OH);
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        const int64_t w0 = adaptive_begin(ow, g.W, g.OW), w1 = adaptive_end(ow, g.W, g.OW);
        const double d = double(dyp[oh * g.OW + ow]) / double((h1 - h0) * (w1 - w0));
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw)
            acc[ih * g.W + iw] += d;
      }
    }
    T* dxp = dx.data + nc * g.H * g.W;
    for (int64_t i = 0; i < g.H * g.W; ++i)
      put(dxp[i], acc[i], accumulate);
  }
}

#define KILN_INSTANTIATE(T)                                                                        \
  template void maxpool2d<T>(const Attrs&, CView<T>, View<T>);                                     \
  template void maxpool2d_backward<T>(const Attrs&, CView<T>, CView<T>, View<T>, bool);            \
  template void avgpool2d<T>(const Attrs&, CView<T>, View<T>);                                     \
  template void avgpool2d_backward<T>(const Attrs&, CView<T>, View<T>, bool);                      \
  template void adaptive_avgpool2d<T>(CView<T>, View<T>);                                          \
  template void adaptive_avgpool2d_backward<T>(CView<T>, View<T>, bool);
KILN_INSTANTIATE(float)
KILN_INSTANTIATE(double)
#undef KILN_INSTANTIATE

} // namespace kiln::cpu
