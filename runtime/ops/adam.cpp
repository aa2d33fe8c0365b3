// adam.update: param, grad, m, v, step (Adam: lr, beta1, beta2, eps, weight_decay), as
// torch.optim.Adam (weight decay added to the gradient, not decoupled): g = grad +
// weight_decay * param; m = beta1 m + (1 - beta1) g; v = beta2 v + (1 - beta2) g^2; with t =
// step[0] (i32, the update's count from 1, written by the host), param -= lr / (1 - beta1^t)
// * m / (sqrt(v) / sqrt(1 - beta2^t) + eps). param, m and v are updated in place.
#include "runtime/cpu/step_args.hpp"
#include "runtime/error.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/step_check.hpp"

namespace kiln {

namespace {

using cpu::StepArgs;
using sv = std::string_view;

constexpr sv grad_step[] = {"grad", "step"}, param_m_v[] = {"param", "m", "v"};
constexpr RoleType types[] = {{"step", ArgType::i32}};

void check(const StepCheck& c) {
  const Adam& h = c.s.adam();
  c.same("param", "grad");
  c.same("param", "m");
  c.same("param", "v");
  c.expect("step", {1});
  c.hyper(h.lr, "lr", 0, 1e6);
  c.hyper(h.weight_decay, "weight_decay", 0, 1e6);
  c.hyper(h.beta1, "beta1", 0, 1);
  c.hyper(h.beta2, "beta2", 0, 1);
  if (!(h.beta1 < 1 && h.beta2 < 1)) c.fail("Adam's betas must be below 1");
  if (!(h.eps > 0 && h.eps <= 1)) c.fail(cat("eps must be in (0, 1], got ", h.eps));
}

template <class T> void update(const StepArgs<T>& c) {
  const int32_t* t = c.template raw<int32_t>("step");
  cpu::adam_update<T>(c.out("param"), c.in("grad"), c.out("m").data, c.out("v").data, t ? *t : 0,
                      c.s.adam());
}

constexpr FnDef fn_defs[] = {{.fn = Fn::adam_update,
                              .name = "adam.update",
                              .signature = {grad_step, param_m_v, {}, param_m_v},
                              .params = params_index<Adam>(),
                              .types = types,
                              .check = check,
                              .cpu_f32 = update<float>,
                              .cpu_f64 = update<double>}};

} // namespace

namespace ops {
OpFile adam_file() { return {{}, fn_defs}; }
} // namespace ops

} // namespace kiln
