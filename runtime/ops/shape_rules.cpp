#include "runtime/ops/shape_rules.hpp"

#include "runtime/error.hpp"

#include <algorithm>

namespace kiln::shape_rules {

int64_t mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r) || r > (int64_t(1) << 46))
    throw Error(cat("size overflow: ", a, " x ", b, " is absurdly large"));
  return r;
}

void need_rank(const Shape& s, size_t rank, std::string_view what) {
  if (s.size() != rank)
    throw Error(cat("expects a ", rank, "-D input ", what, ", got ", shape_str(s)));
}

void check_positive(int64_t v, std::string_view name, int64_t limit) {
  if (v <= 0) throw Error("", std::string(name), cat("must be positive, got ", v));
  if (v > limit) throw Error("", std::string(name), cat("is absurdly large: ", v));
}

void check_positive(const Int2& v, std::string_view name) {
  check_positive(v[0], name, 1 << 16);
  check_positive(v[1], name, 1 << 16);
}

void check_padding(const Attrs& a) {
  for (const Int2& p : {a.padding, padding_end(a)}) {
    if (p[0] < 0 || p[1] < 0) throw Error("", "padding", "must not be negative");
    if (p[0] > (1 << 16) || p[1] > (1 << 16)) throw Error("", "padding", "is absurdly large");
  }
  if (a.padding_end[0] < -1 || a.padding_end[1] < -1)
    throw Error("", "padding_end", "must not be negative");
}

void check_pool_padding(const Attrs& a) {
  for (int i = 0; i < 2; ++i)
    if (std::max(a.padding[i], padding_end(a)[i]) * 2 > a.kernel[i])
      throw Error("", "padding",
                  cat("must be at most half the kernel (",
                      std::max(a.padding[i], padding_end(a)[i]), " > ", a.kernel[i], "/2)"));
}

Shape window_shape(const Shape& x, int64_t c, const Attrs& a, const Int2& k, const Int2& d,
                   bool ceil_mode, std::string_view what) {
  const Int2 pe = padding_end(a);
  const int64_t oh = window_out(x[2], k[0], a.stride[0], a.padding[0], pe[0], d[0], ceil_mode);
  const int64_t ow = window_out(x[3], k[1], a.stride[1], a.padding[1], pe[1], d[1], ceil_mode);
  if (oh <= 0 || ow <= 0)
    throw Error(cat("empty spatial output: ", what, " ", k[0], "x", k[1], " window (stride ",
                    a.stride[0], "x", a.stride[1], ", padding ", a.padding[0], "x", a.padding[1],
                    ", dilation ", d[0], "x", d[1], ") on a ", x[2], "x", x[3], " input gives ", oh,
                    "x", ow));
  return {x[0], c, oh, ow};
}

} // namespace kiln::shape_rules
