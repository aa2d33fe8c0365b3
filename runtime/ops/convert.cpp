// convert: src -> dst, the same logical shape in another layout or dtype (the reference
// stages both through T, so it is a copy there).
#include "runtime/cpu/step_args.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/roles.hpp"
#include "runtime/ops/step_check.hpp"

namespace kiln {

namespace {

using cpu::StepArgs;

void check(const StepCheck& c) { c.same("src", "dst"); }

template <class T> void convert(const StepArgs<T>& c) {
  cpu::copy<T>(c.in("src"), c.out("dst"), c.s.accumulate);
}

constexpr FnDef fn_defs[] = {{.fn = Fn::convert,
                              .name = "convert",
                              .signature = {roles::src, roles::dst, {}},
                              .check = check,
                              .cpu_f32 = convert<float>,
                              .cpu_f64 = convert<double>}};

} // namespace

namespace ops {
OpFile convert_file() { return {{}, fn_defs}; }
} // namespace ops

} // namespace kiln
