// region.copy: src -> dst, a spatial window of a 4-D tensor (Region): dst[n][c][dst + i *
// step][..] (+)= src[n][c][src + i][..] for i < size. Moves the tiles of a tiled segment;
// with a step, interleaves the phases of a strided conv's data gradient into dx.
#include "runtime/cpu/step_args.hpp"
#include "runtime/error.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/roles.hpp"
#include "runtime/ops/step_check.hpp"

namespace kiln {

namespace {

using cpu::CView, cpu::StepArgs, cpu::View;

void check(const StepCheck& c) {
  const Region& r = c.s.region();
  const Shape& a = c.shape("src");
  const Shape& b = c.shape("dst");
  if (a.size() != 4 || b.size() != 4 || a[0] != b[0] || a[1] != b[1])
    c.fail(cat("region copies move windows between 4-D tensors of one batch and channel count: ",
               shape_str(a), " -> ", shape_str(b)));
  for (int i = 0; i < 2; ++i) {
    const int64_t e = r.size[i];
    if (e <= 0 || r.step[i] < 1 || r.src[i] < 0 || r.dst[i] < 0 || r.src[i] + e > a[2 + i] ||
        r.dst[i] + (e - 1) * r.step[i] >= b[2 + i])
      c.fail(cat("region [", r.src[0], ", ", r.src[1], "] + [", r.size[0], ", ", r.size[1],
                 "] -> [", r.dst[0], ", ", r.dst[1], "] step [", r.step[0], ", ", r.step[1],
                 "] does not fit ", shape_str(a), " -> ", shape_str(b)));
  }
}

template <class T> void copy(const StepArgs<T>& c) {
  const Region& r = c.s.region();
  const bool acc = c.s.accumulate;
  CView<T> src = c.in("src");
  View<T> dst = c.out("dst");
  const int64_t nc = src.shape[0] * src.shape[1];
  const int64_t sh = src.shape[2], sw = src.shape[3], dh = dst.shape[2], dw = dst.shape[3];
  for (int64_t p = 0; p < nc; ++p)
    for (int64_t i = 0; i < r.size[0]; ++i) {
      const T* from = src.data + (p * sh + r.src[0] + i) * sw + r.src[1];
      T* to = dst.data + (p * dh + r.dst[0] + i * r.step[0]) * dw + r.dst[1];
      for (int64_t j = 0; j < r.size[1]; ++j) {
        T& d = to[j * r.step[1]];
        d = acc ? T(double(d) + double(from[j])) : from[j];
      }
    }
}

constexpr FnDef fn_defs[] = {{.fn = Fn::region_copy,
                              .name = "region.copy",
                              .signature = {roles::src, roles::dst, {}},
                              .params = params_index<Region>(),
                              .writes_part = true,
                              .check = check,
                              .cpu_f32 = copy<float>,
                              .cpu_f64 = copy<double>}};

} // namespace

namespace ops {
OpFile region_file() { return {{}, fn_defs}; }
} // namespace ops

} // namespace kiln
