// copy: src -> dst, the same elements under any shape of the same count (add's backward, a
// view's gradient).
#include "runtime/cpu/step_args.hpp"
#include "runtime/error.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/roles.hpp"
#include "runtime/ops/step_check.hpp"

namespace kiln {

namespace {

using cpu::StepArgs;

void check(const StepCheck& c) {
  if (numel(c.shape("src")) != numel(c.shape("dst")))
    c.fail(cat("copy from ", shape_str(c.shape("src")), " to ", shape_str(c.shape("dst")),
               " changes the element count"));
}

template <class T> void copy(const StepArgs<T>& c) {
  cpu::copy<T>(c.in("src"), c.out("dst"), c.s.accumulate);
}

constexpr FnDef fn_defs[] = {{.fn = Fn::copy,
                              .name = "copy",
                              .signature = {roles::src, roles::dst, {}},
                              .check = check,
                              .cpu_f32 = copy<float>,
                              .cpu_f64 = copy<double>}};

} // namespace

namespace ops {
OpFile copy_file() { return {{}, fn_defs}; }
} // namespace ops

} // namespace kiln
