// mse: the mean squared error over every element of logits against a target of the same
// shape (a teacher's logits, floats), as torch.nn.functional.mse_loss: distillation's loss.
#include "runtime/cpu/step_args.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/step_check.hpp"

namespace kiln {

namespace {

using cpu::StepArgs;
using sv = std::string_view;

constexpr sv in[] = {"logits", "target"}, loss[] = {"loss"}, dlogits[] = {"dlogits"};

// mse.forward: logits, target -> loss [1].
void check_forward(const StepCheck& c) {
  c.same("logits", "target");
  c.expect("loss", {1});
}

template <class T> void forward(const StepArgs<T>& c) {
  c.out("loss").data[0] = T(cpu::mse<T>(c.in("logits"), c.in("target")));
}

// mse.backward: logits, target -> dlogits = 2 (logits - target) / elements.
void check_backward(const StepCheck& c) {
  c.same("logits", "target");
  c.same("logits", "dlogits");
}

template <class T> void backward(const StepArgs<T>& c) {
  cpu::mse_backward<T>(c.in("logits"), c.in("target"), c.out("dlogits"), c.s.accumulate);
}

constexpr FnDef fn_defs[] = {
    {.fn = Fn::mse_forward,
     .name = "mse.forward",
     .signature = {in, loss, {}},
     .check = check_forward,
     .cpu_f32 = forward<float>,
     .cpu_f64 = forward<double>},
    {.fn = Fn::mse_backward,
     .name = "mse.backward",
     .signature = {in, dlogits, {}},
     .check = check_backward,
     .cpu_f32 = backward<float>,
     .cpu_f64 = backward<double>},
};

} // namespace

namespace ops {
OpFile mse_file() { return {{}, fn_defs}; }
} // namespace ops

} // namespace kiln
