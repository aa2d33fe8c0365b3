// The elementwise and convert families (with the optimizer updates and the MSE loss of kiln
// train): every variant compiles for sm_75, sm_80 and sm_90 and matches the reference on the
// emulator.
#include "tests/kernels/harness.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

using namespace kiln;
using namespace kiln::test;

namespace {

std::vector<StepSpec> specs() {
  std::vector<StepSpec> s;
  const Shape x{2, 3, 5, 7};
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    const std::string d(dtype_name(t));
    s.push_back({"relu " + d, Fn::relu_forward, OpKind::relu, {}, {{"x", x, t}, {"y", x, t}}});
    s.push_back({"relu_backward " + d,
                 Fn::relu_backward,
                 OpKind::relu,
                 {},
                 {{"y", x, t}, {"dy", x, t}, {"dx", x, t}}});
    s.push_back({"hardswish " + d,
                 Fn::hardswish_forward,
                 OpKind::hardswish,
                 {},
                 {{"x", x, t}, {"y", x, t}}});
    StepSpec hsb{"hardswish_backward accumulate " + d,
                 Fn::hardswish_backward,
                 OpKind::hardswish,
                 {},
                 {{"x", x, t}, {"dy", x, t}, {"dx", x, t}}};
    hsb.accumulate = true;
    s.push_back(hsb);
    s.push_back({"add3 " + d,
                 Fn::add_forward,
                 OpKind::add,
                 {},
                 {{"x0", x, t}, {"x1", x, t}, {"x2", x, t}, {"y", x, t}}});
    StepSpec acc{"copy accumulate " + d, Fn::copy, OpKind::add, {}, {{"src", x, t}, {"dst", x, t}}};
    acc.accumulate = true;
    s.push_back(acc);
    StepSpec sgd{"sgd " + d,
                 Fn::sgd_update,
                 OpKind::conv2d,
                 {},
                 {{"param", {7, 3}, t}, {"grad", {7, 3}, t}}};
    sgd.params = Sgd{.lr = 0.125};
    s.push_back(sgd);
    s.push_back({"fill_zero " + d, Fn::fill_zero, OpKind::relu, {}, {{"dst", x, t}}});
    // The optimizers of kiln train: state in f32 whatever the parameters' type.
    const Shape w{5, 3, 3, 3};
    StepSpec decay{"sgd weight decay " + d,
                   Fn::sgd_update,
                   OpKind::conv2d,
                   {},
                   {{"param", w, t}, {"grad", w, t}}};
    decay.params = Sgd{.lr = 0.05, .weight_decay = 0.01};
    s.push_back(decay);
    StepSpec momentum{"sgd momentum " + d,
                      Fn::sgd_update,
                      OpKind::conv2d,
                      {},
                      {{"param", w, t}, {"grad", w, t}, {"velocity", w, DType::f32}}};
    momentum.params = Sgd{.lr = 0.1, .weight_decay = 5e-4, .momentum = 0.9};
    s.push_back(momentum);
    StepSpec adam{"adam " + d,
                  Fn::adam_update,
                  OpKind::conv2d,
                  {},
                  {{"param", w, t},
                   {"grad", w, t},
                   {"m", w, DType::f32},
                   {"v", w, DType::f32},
                   {"step", {1}, DType::i32}}};
    adam.params = Adam{.lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01};
    s.push_back(adam);
    // The distillation loss: a classifier's logits, and more elements than one block's threads.
    for (const Shape& l : {Shape{6, 10}, Shape{3, 5, 9, 11}}) {
      s.push_back({"mse forward " + shape_str(l) + " " + d,
                   Fn::mse_forward,
                   OpKind::relu,
                   {},
                   {{"logits", l, t}, {"target", l, t}, {"loss", {1}, t}}});
      for (bool acc : {false, true}) {
        StepSpec b{"mse backward " + shape_str(l) + (acc ? " acc " : " ") + d,
                   Fn::mse_backward,
                   OpKind::relu,
                   {},
                   {{"logits", l, t}, {"target", l, t}, {"dlogits", l, t}}};
        b.accumulate = acc;
        s.push_back(b);
      }
    }
    // Either layout on each side (a network's NCHW input copied into NHWC tiles).
    for (auto [ls, ld] : {std::pair{Layout::nchw, Layout::nchw},
                          {Layout::nhwc, Layout::nhwc},
                          {Layout::nchw, Layout::nhwc},
                          {Layout::nhwc, Layout::nchw}})
      for (bool acc : {false, true}) {
        StepSpec r{fmt::format("region_copy {}{}{} to {}", d, acc ? " acc " : " ", layout_name(ls),
                               layout_name(ld)),
                   Fn::region_copy,
                   OpKind::conv2d,
                   {},
                   {{"src", {2, 3, 9, 11}, t, ls}, {"dst", {2, 3, 6, 5}, t, ld}}};
        r.accumulate = acc;
        r.params = Region{.src = {2, 5}, .dst = {1, 0}, .size = {4, 5}};
        s.push_back(r);
        // With a step: a strided conv's data-gradient phase interleaved into dx.
        StepSpec st = r;
        st.label += " step 2x3";
        st.args[1].shape = {2, 3, 9, 14};
        st.params = Region{.src = {1, 0}, .dst = {1, 2}, .size = {4, 4}, .step = {2, 3}};
        s.push_back(st);
      }
    s.push_back({"convert nchw->nhwc " + d,
                 Fn::convert,
                 OpKind::relu,
                 {},
                 {{"src", x, DType::f32}, {"dst", x, t, Layout::nhwc}}});
    s.push_back({"convert nhwc->nchw " + d,
                 Fn::convert,
                 OpKind::relu,
                 {},
                 {{"src", x, t, Layout::nhwc}, {"dst", x, DType::f32}}});
  }
  // The activations of elementwise.cuh's ACTIVATION ops (ACT, with ACT_P0/ACT_P1 where they
  // have parameters), forward and accumulating backward; f16 for two.
  Attrs relu6;
  relu6.min = 0, relu6.max = 6;
  Attrs clip_odd;
  clip_odd.min = -1.25, clip_odd.max = 0.5;
  Attrs onnx_hardsigmoid;
  onnx_hardsigmoid.alpha = 0.2, onnx_hardsigmoid.beta = 0.5;
  const struct {
    const char* name;
    OpKind op;
    Fn forward, backward;
    Attrs attrs;
  } acts[] = {
      {"relu6", OpKind::clip, Fn::clip_forward, Fn::clip_backward, relu6},
      {"clip(-1.25, 0.5)", OpKind::clip, Fn::clip_forward, Fn::clip_backward, clip_odd},
      {"hardsigmoid", OpKind::hardsigmoid, Fn::hardsigmoid_forward, Fn::hardsigmoid_backward,
       onnx_hardsigmoid},
      {"sigmoid", OpKind::sigmoid, Fn::sigmoid_forward, Fn::sigmoid_backward, {}},
      {"silu", OpKind::silu, Fn::silu_forward, Fn::silu_backward, {}},
      {"gelu", OpKind::gelu, Fn::gelu_forward, Fn::gelu_backward, {}},
      {"gelu_tanh", OpKind::gelu_tanh, Fn::gelu_tanh_forward, Fn::gelu_tanh_backward, {}},
  };
  const Shape xa{2, 3, 5, 7};
  for (const auto& a : acts) {
    s.push_back({std::string(a.name) + " f32",
                 a.forward,
                 a.op,
                 a.attrs,
                 {{"x", xa, DType::f32}, {"y", xa, DType::f32}}});
    StepSpec b{std::string(a.name) + " backward accumulate f32",
               a.backward,
               a.op,
               a.attrs,
               {{"x", xa, DType::f32}, {"dy", xa, DType::f32}, {"dx", xa, DType::f32}}};
    b.accumulate = true;
    s.push_back(b);
  }
  // mul: same shape, a squeeze-excite gate [N, C, 1, 1] broadcast over H, W in either layout,
  // and the gradients: of the full input (dy times the broadcast gate) and of the gate (a sum
  // over H, W per channel).
  const Shape g{2, 3, 1, 1};
  for (Layout l : {Layout::nchw, Layout::nhwc}) {
    const std::string ln(layout_name(l));
    s.push_back({"mul same shape " + ln,
                 Fn::mul_forward,
                 OpKind::mul,
                 {},
                 {{"x0", xa, DType::f32, l}, {"x1", xa, DType::f32, l}, {"y", xa, DType::f32, l}}});
    s.push_back({"mul gate " + ln,
                 Fn::mul_forward,
                 OpKind::mul,
                 {},
                 {{"x0", xa, DType::f32, l}, {"x1", g, DType::f32, l}, {"y", xa, DType::f32, l}}});
    StepSpec full{"mul backward full accumulate " + ln,
                  Fn::mul_backward,
                  OpKind::mul,
                  {},
                  {{"x", g, DType::f32, l}, {"dy", xa, DType::f32, l}, {"dx", xa, DType::f32, l}}};
    full.accumulate = true;
    s.push_back(full);
    s.push_back({"mul backward gate " + ln,
                 Fn::mul_backward,
                 OpKind::mul,
                 {},
                 {{"x", xa, DType::f32, l}, {"dy", xa, DType::f32, l}, {"dx", g, DType::f32, l}}});
  }
  // 16-byte packs (VEC): element counts a multiple of 8 (f16, bf16) or 4 (f32): every packed
  // op, accumulating or not, with a NaN-free ReLU mask and a 4-input add.
  const Shape xp{2, 4, 3, 8};
  for (DType t : {DType::f16, DType::bf16, DType::f32}) {
    const std::string d = std::string(dtype_name(t)) + " packed";
    s.push_back({"relu " + d, Fn::relu_forward, OpKind::relu, {}, {{"x", xp, t}, {"y", xp, t}}});
    StepSpec rb{"relu_backward accumulate " + d,
                Fn::relu_backward,
                OpKind::relu,
                {},
                {{"y", xp, t}, {"dy", xp, t}, {"dx", xp, t}}};
    rb.accumulate = true;
    s.push_back(rb);
    s.push_back({"add4 " + d,
                 Fn::add_forward,
                 OpKind::add,
                 {},
                 {{"x0", xp, t}, {"x1", xp, t}, {"x2", xp, t}, {"x3", xp, t}, {"y", xp, t}}});
    s.push_back({"copy " + d, Fn::copy, OpKind::add, {}, {{"src", xp, t}, {"dst", xp, t}}});
    s.push_back({"fill_zero " + d, Fn::fill_zero, OpKind::relu, {}, {{"dst", xp, t}}});
    StepSpec sgd{
        "sgd " + d, Fn::sgd_update, OpKind::conv2d, {}, {{"param", xp, t}, {"grad", xp, t}}};
    sgd.params = Sgd{.lr = 0.125};
    s.push_back(sgd);
    s.push_back({"mul same shape " + d,
                 Fn::mul_forward,
                 OpKind::mul,
                 {},
                 {{"x0", xp, t}, {"x1", xp, t}, {"y", xp, t}}});
    StepSpec mb{"mul backward accumulate " + d,
                Fn::mul_backward,
                OpKind::mul,
                {},
                {{"dy", xp, t}, {"x", xp, t}, {"dx", xp, t}}};
    mb.accumulate = true;
    s.push_back(mb);
    s.push_back({std::string(acts[5].name) + " " + d,
                 acts[5].forward,
                 acts[5].op,
                 acts[5].attrs,
                 {{"x", xp, t}, {"y", xp, t}}});
    StepSpec ab{std::string(acts[5].name) + " backward " + d,
                acts[5].backward,
                acts[5].op,
                acts[5].attrs,
                {{"x", xp, t}, {"dy", xp, t}, {"dx", xp, t}}};
    s.push_back(ab);
  }
  s.push_back({"mul gate f16",
               Fn::mul_forward,
               OpKind::mul,
               {},
               {{"x0", xa, DType::f16}, {"x1", g, DType::f16}, {"y", xa, DType::f16}}});
  for (int i : {0, 5})
    s.push_back({std::string(acts[i].name) + " f16",
                 acts[i].forward,
                 acts[i].op,
                 acts[i].attrs,
                 {{"x", xa, DType::f16}, {"y", xa, DType::f16}}});
  return s;
}

} // namespace

TEST_CASE("elementwise and convert variants compile with NVRTC for sm_75, sm_80 and sm_90") {
  std::vector<std::string> unserved;
  const auto built = all_variants(specs(), {"t4", "a100", "h200"}, &unserved);
  CHECK(unserved.empty());
  const auto failures = nvrtc_failures(built);
  for (const std::string& f : failures)
    FAIL_CHECK(f);
}

TEST_CASE("elementwise and convert variants match the reference on the emulator") {
  const auto built = all_variants(specs(), {"h200"});
  REQUIRE(built.size() >= specs().size());
  for (const KernelCheck& r : emu_checks(built, temp_dir("kiln-elementwise"))) {
    INFO(r.node << ": " << r.kernel << " rel " << r.rel << " " << r.error);
    CHECK(r.pass);
  }
}
