#include "runtime/cpu/reference_step.hpp"

#include "runtime/cpu/ops.hpp"
#include "runtime/error.hpp"

#include <vector>

namespace kiln::cpu {

namespace {

template <class T> struct Bound {
  const Plan& p;
  const Step& s;
  std::byte* arena;

  T* ptr(int b) const { return reinterpret_cast<T*>(arena + p.buffers[b].offset); }
  View<T> out(std::string_view role) const {
    const int b = s.need(role);
    return {ptr(b), p.buffers[b].shape};
  }
  CView<T> in(std::string_view role) const {
    const int b = s.need(role);
    return {ptr(b), p.buffers[b].shape};
  }
  const T* opt(std::string_view role) const {
    const int b = s.arg(role);
    return b < 0 ? nullptr : ptr(b);
  }
  std::vector<CView<T>> inputs() const {
    std::vector<CView<T>> xs;
    for (int b : s.variadic('x')) xs.push_back({ptr(b), p.buffers[b].shape});
    return xs;
  }
  std::span<const int64_t> targets() const {
    const int b = s.need("target");
    return {reinterpret_cast<const int64_t*>(arena + p.buffers[b].offset),
            size_t(numel(p.buffers[b].shape))};
  }
};

template <class T> void run(const Bound<T>& c) {
  const Step& s = c.s;
  const Attrs& a = s.attrs;
  const bool acc = s.accumulate;
  switch (s.fn) {
  case Fn::conv2d_forward: conv2d<T>(a, c.in("x"), c.in("w"), c.opt("b"), c.out("y")); break;
  case Fn::conv2d_backward_data: conv2d_backward_data<T>(a, c.in("dy"), c.in("w"), c.out("dx"), acc); break;
  case Fn::conv2d_backward_weight:
    conv2d_backward_weight<T>(a, c.in("x"), c.in("dy"), c.out("dw"), acc);
    break;
  case Fn::linear_forward: linear<T>(c.in("x"), c.in("w"), c.opt("b"), c.out("y")); break;
  case Fn::linear_backward_data: linear_backward_data<T>(c.in("dy"), c.in("w"), c.out("dx"), acc); break;
  case Fn::linear_backward_weight:
    linear_backward_weight<T>(c.in("x"), c.in("dy"), c.out("dw"), acc);
    break;
  case Fn::bias_backward: bias_backward<T>(c.in("dy"), c.out("db").data, acc); break;
  case Fn::batchnorm_forward:
    batchnorm_inference<T>(a, c.in("x"), c.in("weight").data, c.in("bias").data,
                           c.in("running_mean").data, c.in("running_var").data, c.out("y"));
    break;
  case Fn::batchnorm_forward_train:
    batchnorm_train<T>(a, c.in("x"), c.in("weight").data, c.in("bias").data, c.out("y"),
                       c.out("mean").data, c.out("invstd").data);
    break;
  case Fn::batchnorm_backward:
    batchnorm_backward<T>(c.in("x"), c.in("dy"), c.in("weight").data, c.in("mean").data,
                          c.in("invstd").data, c.out("dx"), c.out("dweight").data,
                          c.out("dbias").data, acc);
    break;
  case Fn::relu_forward: relu<T>(c.in("x"), c.out("y")); break;
  case Fn::relu_backward: relu_backward<T>(c.in("y"), c.in("dy"), c.out("dx"), acc); break;
  case Fn::maxpool2d_forward: maxpool2d<T>(a, c.in("x"), c.out("y")); break;
  case Fn::maxpool2d_backward: maxpool2d_backward<T>(a, c.in("x"), c.in("dy"), c.out("dx"), acc); break;
  case Fn::avgpool2d_forward: avgpool2d<T>(a, c.in("x"), c.out("y")); break;
  case Fn::avgpool2d_backward: avgpool2d_backward<T>(a, c.in("dy"), c.out("dx"), acc); break;
  case Fn::adaptive_avgpool2d_forward: adaptive_avgpool2d<T>(c.in("x"), c.out("y")); break;
  case Fn::adaptive_avgpool2d_backward: adaptive_avgpool2d_backward<T>(c.in("dy"), c.out("dx"), acc); break;
  case Fn::add_forward: {
    auto xs = c.inputs();
    add<T>(xs, c.out("y"));
    break;
  }
  case Fn::concat_forward: {
    auto xs = c.inputs();
    concat<T>(xs, c.out("y"));
    break;
  }
  case Fn::concat_backward: concat_backward<T>(c.in("dy"), s.channel_offset, c.out("dx"), acc); break;
  case Fn::upsample2d_forward: upsample2d<T>(a, c.in("x"), c.out("y")); break;
  case Fn::upsample2d_backward: upsample2d_backward<T>(a, c.in("dy"), c.out("dx"), acc); break;
  case Fn::softmax_forward: softmax<T>(c.in("x"), c.out("y")); break;
  case Fn::softmax_backward: softmax_backward<T>(c.in("y"), c.in("dy"), c.out("dx"), acc); break;
  case Fn::softmax_xent_forward: {
    const double loss = softmax_cross_entropy<T>(c.in("logits"), c.targets(), c.out("probs"));
    c.out("loss").data[0] = T(loss);
    break;
  }
  case Fn::softmax_xent_backward:
    softmax_cross_entropy_backward<T>(c.in("probs"), c.targets(), c.out("dlogits"), acc);
    break;
  case Fn::copy: copy<T>(c.in("src"), c.out("dst"), acc); break;
  case Fn::sgd_update: sgd_update<T>(c.out("param"), c.in("grad"), s.lr); break;
  }
}

} // namespace

void run_reference_step(const Plan& plan, const Step& step, std::byte* arena) {
  switch (plan.dtype) {
  case DType::f32: run(Bound<float>{plan, step, arena}); break;
  case DType::f64: run(Bound<double>{plan, step, arena}); break;
  default:
    throw Error("", "", cat("the reference computes f32 and f64, not ", dtype_name(plan.dtype),
                            " (use --dtype f32 or f64 on the cpu backend)"));
  }
}

} // namespace kiln::cpu
