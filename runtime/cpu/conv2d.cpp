// conv2d forward, backward data, backward weight and the bias gradient (shared with linear).
// Loops are arranged so the innermost runs along an output row (ow) with no bounds tests:
// the valid range of rows and columns for each kernel tap is computed once. Accumulation is
// in double; every sum runs in a fixed order, so results are deterministic, whatever the
// threads: each computes whole output planes (or weights) of its own (parallel_for.hpp).
#include "runtime/cpu/detail.hpp"
#include "runtime/parallel_for.hpp"

#include <vector>

namespace kiln::cpu {

namespace {

using detail::need;
using detail::put;
using detail::valid_range;

struct ConvGeo {
  int64_t N, C, H, W; // input
  int64_t O, OH, OW;  // output
  int64_t KH, KW;     // kernel
  int64_t G, Cg, Og;  // groups, input and output channels per group
  int64_t sh, sw, ph, pw, dh, dw;
};

// Checks x [N, C, H, W], w [O, C/groups, KH, KW], y [N, O, OH, OW] against the attributes.
ConvGeo conv_geo(const Attrs& a, const Shape& x, const Shape& w, const Shape& y,
                 std::string_view op) {
  detail::need_rank(x, 4, op, "input");
  detail::need_rank(w, 4, op, "weight");
  detail::need_rank(y, 4, op, "output");
  ConvGeo g{};
  g.N = x[0], g.C = x[1], g.H = x[2], g.W = x[3];
  g.O = y[1], g.OH = y[2], g.OW = y[3];
  g.KH = w[2], g.KW = w[3];
  g.G = a.groups;
  g.sh = a.stride[0], g.sw = a.stride[1], g.ph = a.padding[0], g.pw = a.padding[1];
  g.dh = a.dilation[0], g.dw = a.dilation[1];
  need(g.G > 0 && g.C % g.G == 0 && g.O % g.G == 0, op, "channels ", g.C, " -> ", g.O,
       " are not divisible by groups ", g.G);
  g.Cg = g.C / g.G, g.Og = g.O / g.G;
  need(y[0] == g.N && w[0] == g.O && w[1] == g.Cg, op, "shapes do not fit: input ", shape_str(x),
       ", weight ", shape_str(w), ", output ", shape_str(y), ", groups ", g.G);
  need(g.sh > 0 && g.sw > 0 && g.dh > 0 && g.dw > 0 && g.ph >= 0 && g.pw >= 0, op,
       "stride and dilation must be positive, padding not negative");
  need(w[2] == a.kernel[0] && w[3] == a.kernel[1], op, "weight ", shape_str(w),
       " does not match kernel ", a.kernel[0], "x", a.kernel[1]);
  need(g.OH == window_out(g.H, g.KH, g.sh, g.ph, padding_end(a)[0], g.dh, false) &&
           g.OW == window_out(g.W, g.KW, g.sw, g.pw, padding_end(a)[1], g.dw, false),
       op, "output ", shape_str(y), " does not match input ", shape_str(x));
  return g;
}

// Calls f(kh, kw, offh, offw, rh, rw) for each kernel tap in order: the tap's offsets into
// the input, and the output rows and columns whose input pixel for it lies in the image.
template <class F> void for_each_tap(const ConvGeo& g, F&& f) {
  for (int64_t kh = 0; kh < g.KH; ++kh) {
    const int64_t offh = kh * g.dh - g.ph;
    const auto rh = valid_range(offh, g.sh, g.H, g.OH);
    for (int64_t kw = 0; kw < g.KW; ++kw) {
      const int64_t offw = kw * g.dw - g.pw;
      f(kh, kw, offh, offw, rh, valid_range(offw, g.sw, g.W, g.OW));
    }
  }
}

} // namespace

template <class T> void conv2d(const Attrs& a, CView<T> x, CView<T> w, const T* bias, View<T> y) {
  const ConvGeo g = conv_geo(a, x.shape, w.shape, y.shape, "conv2d");
  const int64_t plane = g.OH * g.OW;
  const double work = double(g.N * g.O) * double(plane) * double(g.Cg * g.KH * g.KW);
  parallel_ranges(g.N * g.O, work, [&](int64_t lo, int64_t hi) {
    std::vector<double> acc_buf(plane);
    double* __restrict acc = acc_buf.data();
    for (int64_t no = lo; no < hi; ++no) {
      const int64_t n = no / g.O, o = no % g.O;
      const double b = bias ? double(bias[o]) : 0.0;
      std::fill(acc, acc + plane, b);
      const int64_t c0 = (o / g.Og) * g.Cg;
      for (int64_t cg = 0; cg < g.Cg; ++cg) {
        const T* __restrict xp = x.data + ((n * g.C + c0 + cg) * g.H) * g.W;
        const T* wp = w.data + (o * g.Cg + cg) * g.KH * g.KW;
        for_each_tap(g, [&](int64_t kh, int64_t kw, int64_t offh, int64_t offw, auto rh, auto rw) {
          const double wv = double(wp[kh * g.KW + kw]);
          for (int64_t oh = rh.lo; oh < rh.hi; ++oh) {
            const T* xr = xp + (oh * g.sh + offh) * g.W; // input row
            detail::axpy(acc + oh * g.OW + rw.lo, xr + rw.lo * g.sw + offw, g.sw, wv,
                         rw.hi - rw.lo);
          }
        });
      }
      T* yp = y.data + (n * g.O + o) * plane;
      for (int64_t i = 0; i < plane; ++i)
        yp[i] = T(acc[i]);
    }
  });
}

// dx[n, c] = sum over the output channels o of c's group and the taps (kh, kw) of w[o, c, kh,
// kw] times dy[n, o] scattered back to the input positions the tap read.
template <class T>
void conv2d_backward_data(const Attrs& a, CView<T> dy, CView<T> w, View<T> dx, bool accumulate) {
  const ConvGeo g = conv_geo(a, dx.shape, w.shape, dy.shape, "conv2d_backward_data");
  const int64_t plane = g.H * g.W;
  const double work = double(g.N * g.C) * double(g.OH * g.OW) * double(g.Og * g.KH * g.KW);
  parallel_ranges(g.N * g.C, work, [&](int64_t lo, int64_t hi) {
    std::vector<double> acc_buf(plane);
    double* __restrict acc = acc_buf.data();
    for (int64_t nc = lo; nc < hi; ++nc) {
      const int64_t n = nc / g.C, c = nc % g.C;
      std::fill(acc, acc + plane, 0.0);
      const int64_t grp = c / g.Cg, cg = c % g.Cg;
      for (int64_t og = 0; og < g.Og; ++og) {
        const int64_t o = grp * g.Og + og;
        const T* __restrict dyp = dy.data + (n * g.O + o) * g.OH * g.OW;
        const T* wp = w.data + (o * g.Cg + cg) * g.KH * g.KW;
        for_each_tap(g, [&](int64_t kh, int64_t kw, int64_t offh, int64_t offw, auto rh, auto rw) {
          const double wv = double(wp[kh * g.KW + kw]);
          for (int64_t oh = rh.lo; oh < rh.hi; ++oh) {
            double* ar = acc + (oh * g.sh + offh) * g.W; // input row
            detail::axpy_scatter(ar + rw.lo * g.sw + offw, g.sw, dyp + oh * g.OW + rw.lo, wv,
                                 rw.hi - rw.lo);
          }
        });
      }
      T* dxp = dx.data + (n * g.C + c) * plane;
      for (int64_t i = 0; i < plane; ++i)
        put(dxp[i], acc[i], accumulate);
    }
  });
}

// dw[o, cg, kh, kw] = sum over n, oh, ow of dy[n, o, oh, ow] * x[n, c, ih, iw]. The sum is
// kept per output column (a vector of partial sums) so the inner loop vectorizes without
// reassociating a scalar reduction; the columns are summed in order at the end.
template <class T>
void conv2d_backward_weight(const Attrs& a, CView<T> x, CView<T> dy, View<T> dw, bool accumulate) {
  const ConvGeo g = conv_geo(a, x.shape, dw.shape, dy.shape, "conv2d_backward_weight");
  const double work = double(g.O * g.Cg * g.KH * g.KW) * double(g.N * g.OH * g.OW);
  parallel_ranges(g.O, work, [&](int64_t lo, int64_t hi) {
    std::vector<double> part_buf(g.OW);
    double* __restrict part = part_buf.data();
    for (int64_t o = lo; o < hi; ++o) {
      const int64_t c0 = (o / g.Og) * g.Cg;
      for (int64_t cg = 0; cg < g.Cg; ++cg)
        for_each_tap(g, [&](int64_t kh, int64_t kw, int64_t offh, int64_t offw, auto rh, auto rw) {
          std::fill(part, part + g.OW, 0.0);
          for (int64_t n = 0; n < g.N; ++n) {
            const T* xp = x.data + ((n * g.C + c0 + cg) * g.H) * g.W;
            const T* dyp = dy.data + (n * g.O + o) * g.OH * g.OW;
            for (int64_t oh = rh.lo; oh < rh.hi; ++oh) {
              const T* xr = xp + (oh * g.sh + offh) * g.W; // input row
              detail::mul_add(part + rw.lo, dyp + oh * g.OW + rw.lo, xr + rw.lo * g.sw + offw, g.sw,
                              rw.hi - rw.lo);
            }
          }
          double s = 0;
          for (int64_t ow = 0; ow < g.OW; ++ow)
            s += part[ow];
          put(dw.data[((o * g.Cg + cg) * g.KH + kh) * g.KW + kw], s, accumulate);
        });
    }
  });
}

template <class T> void bias_backward(CView<T> dy, T* db, bool accumulate) {
  detail::need(dy.shape.size() >= 2, "bias_backward", "dy must have a channel axis, got ",
               shape_str(dy.shape));
  const int64_t N = dy.shape[0], C = dy.shape[1], S = detail::inner_size(dy.shape, 2);
  for (int64_t c = 0; c < C; ++c) {
    double s = 0;
    for (int64_t n = 0; n < N; ++n) {
      const T* p = dy.data + (n * C + c) * S;
      for (int64_t i = 0; i < S; ++i)
        s += double(p[i]);
    }
    put(db[c], s, accumulate);
  }
}

#define KILN_INSTANTIATE(T)                                                                        \
  template void conv2d<T>(const Attrs&, CView<T>, CView<T>, const T*, View<T>);                    \
  template void conv2d_backward_data<T>(const Attrs&, CView<T>, CView<T>, View<T>, bool);          \
  template void conv2d_backward_weight<T>(const Attrs&, CView<T>, CView<T>, View<T>, bool);        \
  template void bias_backward<T>(CView<T>, T*, bool);
KILN_INSTANTIATE(float)
KILN_INSTANTIATE(double)
#undef KILN_INSTANTIATE

} // namespace kiln::cpu
