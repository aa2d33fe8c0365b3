// partial.sum: partial [S, ...] or [S * N, ...], [b], [residual], [nnz: guard] -> dst [...]
// or [N, ...]: the sum over the S slices, in order, then the epilogue of the step it
// completes (+ b per channel, + residual, the activation). Completes a split-K forward and a
// sparse weight gradient reduced over ranges of rows.
#include "runtime/cpu/step_args.hpp"
#include "runtime/error.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/roles.hpp"
#include "runtime/ops/step_check.hpp"

namespace kiln {

namespace {

using cpu::CView, cpu::StepArgs, cpu::View;
using sv = std::string_view;

constexpr sv in[] = {"partial", "b", "residual", "nnz"}, optional[] = {"b", "residual", "nnz"};

void check(const StepCheck& c) {
  // [S, *dst] (a weight gradient's), or [S * N, *dst[1:]] (a split-K forward's: S images'
  // worth of partial outputs, in dst's layout).
  const Shape& p = c.shape("partial");
  const Shape& d = c.shape("dst");
  const bool stacked = p.size() == d.size() + 1 && Shape(p.begin() + 1, p.end()) == d;
  const bool batched = p.size() == d.size() && !d.empty() && d[0] > 0 && p[0] % d[0] == 0 &&
                       p[0] >= d[0] &&
                       Shape(p.begin() + 1, p.end()) == Shape(d.begin() + 1, d.end());
  if (!stacked && !batched)
    c.fail(cat("\"partial\" ", shape_str(p), " is neither [S, ", shape_str(d).substr(1),
               " nor [S * ", d.empty() ? 0 : d[0], ", ...] over \"dst\" ", shape_str(d)));
  if (c.has("b")) c.expect("b", c.channels("dst"));
  if (c.has("residual")) c.same("residual", "dst");
}

template <class T> void sum(const StepArgs<T>& c) {
  CView<T> part = c.in("partial");
  View<T> dst = c.out("dst");
  const Activation act = c.s.epilogue.activation;
  const int64_t n = numel(dst.shape), S = numel(part.shape) / n;
  // The epilogue of a split-K forward: channel axis 1, logical (NCHW) order.
  const T* bias = c.opt("b");
  const T* res = c.opt("residual");
  const int64_t inner = dst.shape.size() > 2 ? n / (dst.shape[0] * dst.shape[1]) : 1;
  for (int64_t i = 0; i < n; ++i) {
    double v = c.s.accumulate ? double(dst.data[i]) : 0.0;
    for (int64_t r = 0; r < S; ++r)
      v += double(part.data[r * n + i]);
    if (bias) v += double(bias[(i / inner) % dst.shape[1]]);
    if (res) v += double(res[i]);
    dst.data[i] = T(activate(act, v));
  }
}

constexpr FnDef fn_defs[] = {{.fn = Fn::partial_sum,
                              .name = "partial.sum",
                              .signature = {in, roles::dst, optional},
                              .epilogue = true,
                              .guardable = true,
                              .check = check,
                              .cpu_f32 = sum<float>,
                              .cpu_f64 = sum<double>}};

} // namespace

namespace ops {
OpFile partial_file() { return {{}, fn_defs}; }
} // namespace ops

} // namespace kiln
