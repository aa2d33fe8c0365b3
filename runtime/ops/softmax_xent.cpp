// softmax_xent: the mean softmax cross-entropy over axis 1 of logits [N, K, *spatial]
// against class targets [N, *spatial] (i64), the training loss of classifiers.
#include "runtime/cpu/step_args.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/step_check.hpp"

namespace kiln {

namespace {

using cpu::StepArgs;
using sv = std::string_view;

constexpr sv fwd_in[] = {"logits", "target"}, fwd_out[] = {"probs", "loss"};
constexpr sv bw_in[] = {"probs", "target"}, bw_out[] = {"dlogits"};
constexpr RoleType types[] = {{"target", ArgType::i64}};

// The target's shape: the logits' (or probabilities') without the class axis.
void check_target(const StepCheck& c, sv logits) {
  const Shape& l = c.shape(logits);
  Shape t = l;
  if (l.size() < 2) c.fail("logits need a class axis");
  t.erase(t.begin() + 1);
  c.expect("target", t);
}

// softmax_xent.forward: logits, target -> probs (for the backward), loss [1].
void check_forward(const StepCheck& c) {
  check_target(c, "logits");
  c.same("logits", "probs");
  c.expect("loss", {1});
}

template <class T> void forward(const StepArgs<T>& c) {
  const double loss = cpu::softmax_cross_entropy<T>(c.in("logits"), c.targets(), c.out("probs"));
  c.out("loss").data[0] = T(loss);
}

// softmax_xent.backward: probs, target -> dlogits = (probs - onehot(target)) / positions.
void check_backward(const StepCheck& c) {
  check_target(c, "probs");
  c.same("probs", "dlogits");
}

template <class T> void backward(const StepArgs<T>& c) {
  cpu::softmax_cross_entropy_backward<T>(c.in("probs"), c.targets(), c.out("dlogits"),
                                         c.s.accumulate);
}

constexpr FnDef fn_defs[] = {
    {.fn = Fn::softmax_xent_forward,
     .name = "softmax_xent.forward",
     .signature = {fwd_in, fwd_out, {}},
     .types = types,
     .check = check_forward,
     .cpu_f32 = forward<float>,
     .cpu_f64 = forward<double>},
    {.fn = Fn::softmax_xent_backward,
     .name = "softmax_xent.backward",
     .signature = {bw_in, bw_out, {}},
     .types = types,
     .check = check_backward,
     .cpu_f32 = backward<float>,
     .cpu_f64 = backward<double>},
};

} // namespace

namespace ops {
OpFile softmax_xent_file() { return {{}, fn_defs}; }
} // namespace ops

} // namespace kiln
