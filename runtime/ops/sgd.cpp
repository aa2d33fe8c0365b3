// sgd.update: param, grad, [velocity] (Sgd: lr, weight_decay, momentum), as
// torch.optim.SGD (dampening 0, not Nesterov): g = grad + weight_decay * param; with a
// velocity, velocity = momentum * velocity + g and g = velocity; param -= lr * g. param and
// velocity are updated in place.
#include "runtime/cpu/step_args.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/step_check.hpp"

namespace kiln {

namespace {

using cpu::StepArgs;
using sv = std::string_view;

constexpr sv grad[] = {"grad"}, param_velocity[] = {"param", "velocity"}, velocity[] = {"velocity"};

void check(const StepCheck& c) {
  const Sgd& h = c.s.sgd();
  c.same("param", "grad");
  if (c.has("velocity")) c.same("param", "velocity");
  if (c.has("velocity") != (h.momentum != 0))
    c.fail("a velocity comes with a nonzero momentum, and a momentum needs a velocity");
  c.hyper(h.lr, "lr", 0, 1e6);
  c.hyper(h.weight_decay, "weight_decay", 0, 1e6);
  c.hyper(h.momentum, "momentum", 0, 1);
}

template <class T> void update(const StepArgs<T>& c) {
  cpu::sgd_update<T>(c.out("param"), c.in("grad"), c.opt_out("velocity"), c.s.sgd());
}

constexpr FnDef fn_defs[] = {{.fn = Fn::sgd_update,
                              .name = "sgd.update",
                              .signature = {grad, param_velocity, velocity, param_velocity},
                              .params = params_index<Sgd>(),
                              .check = check,
                              .cpu_f32 = update<float>,
                              .cpu_f64 = update<double>}};

} // namespace

namespace ops {
OpFile sgd_file() { return {{}, fn_defs}; }
} // namespace ops

} // namespace kiln
