// bias.backward: dy -> db, the bias gradient of conv2d or linear (dy summed over every axis
// but 1).
#include "runtime/cpu/step_args.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/roles.hpp"
#include "runtime/ops/step_check.hpp"

namespace kiln {

namespace {

using cpu::StepArgs;

constexpr std::string_view db[] = {"db"};

void check(const StepCheck& c) { c.expect("db", c.channels("dy")); }

template <class T> void backward(const StepArgs<T>& c) {
  cpu::bias_backward<T>(c.in("dy"), c.out("db").data, c.s.accumulate);
}

constexpr FnDef fn_defs[] = {{.fn = Fn::bias_backward,
                              .name = "bias.backward",
                              .signature = {roles::dy, db, {}},
                              .check = check,
                              .cpu_f32 = backward<float>,
                              .cpu_f64 = backward<double>}};

} // namespace

namespace ops {
OpFile bias_file() { return {{}, fn_defs}; }
} // namespace ops

} // namespace kiln
