// templates/dense/reduce.cuh's reduce op: sum, mean and max forward and backward over C,
// H, W and their combinations, keepdims either way (y of rank 4, 3, 2 or 1), nchw, nhwc and
// [N, C], f32, f16, bf16, accumulating or not. Every variant compiles for sm_75, sm_80 and
// sm_90 and matches the reference on the emulator with all checks on.
#include "tests/kernels/harness.hpp"

#include <doctest/doctest.h>

using namespace kiln;
using namespace kiln::test;

namespace {

struct Axes {
  bool c, h, w, keep;
};

StepSpec reduce(OpKind op, DType t, Shape x, Layout l, Axes ax, bool backward, bool acc) {
  Attrs a;
  a.reduce_c = ax.c;
  a.reduce_h = ax.h;
  a.reduce_w = ax.w;
  a.keepdims = ax.keep;
  const Shape in[] = {x};
  const Shape y = infer_shape(op, a, in);
  const int k = op == OpKind::reduce_sum ? 0 : op == OpKind::reduce_mean ? 1 : 2;
  static constexpr Fn fwd[] = {Fn::reduce_sum_forward, Fn::reduce_mean_forward,
                               Fn::reduce_max_forward};
  static constexpr Fn bwd[] = {Fn::reduce_sum_backward, Fn::reduce_mean_backward,
                               Fn::reduce_max_backward};
  const std::string name = std::string(op_name(op)) + (backward ? ".backward " : ".forward ") +
                           std::string(dtype_name(t)) + " " + shape_str(x) + " -> " + shape_str(y) +
                           (l == Layout::nhwc ? " nhwc" : "") + (acc ? " acc" : "");
  StepSpec s{name, backward ? bwd[k] : fwd[k], op};
  const Layout yl = y.size() == 4 ? l : Layout::nchw; // a layout is a 4-D tensor's
  if (!backward)
    s.args = {{"x", x, t, l}, {"y", y, t, yl}};
  else if (op == OpKind::reduce_max)
    s.args = {{"x", x, t, l}, {"dy", y, t, yl}, {"dx", x, t, l}};
  else
    s.args = {{"dy", y, t, yl}, {"dx", x, t, l}};
  s.attrs = a;
  s.accumulate = acc;
  return s;
}

std::vector<StepSpec> specs() {
  const Layout nchw = Layout::nchw, nhwc = Layout::nhwc;
  const OpKind ops[] = {OpKind::reduce_sum, OpKind::reduce_mean, OpKind::reduce_max};
  const Axes c{true, false, false, true}, hw{false, true, true, false},
      chw{true, true, true, false}, cw{true, false, true, true}, h{false, true, false, false},
      c_flat{true, false, false, false};
  std::vector<StepSpec> s;
  for (OpKind op : ops) {
    for (DType t : {DType::f32, DType::f16, DType::bf16})
      s.push_back(reduce(op, t, {2, 40, 3, 5}, nchw, c, false, false));
    for (bool bw : {false, true}) {
      const DType f = DType::f32;
      s.push_back(reduce(op, f, {2, 6, 7, 9}, nchw, hw, bw, false));
      s.push_back(reduce(op, f, {2, 6, 7, 9}, nhwc, c_flat, bw, bw));
      s.push_back(reduce(op, f, {2, 6, 7, 9}, nhwc, cw, bw, false));
      s.push_back(reduce(op, f, {2, 5, 3, 4}, nchw, chw, bw, false));
      s.push_back(reduce(op, f, {2, 5, 3, 4}, nchw, h, bw, bw));
      s.push_back(reduce(op, f, {3, 70}, nchw, c_flat, bw, false));
    }
    s.push_back(reduce(op, DType::f16, {2, 6, 7, 9}, nchw, hw, true, true));
  }
  return s;
}

} // namespace

TEST_CASE("reduce variants compile with NVRTC for sm_75, sm_80 and sm_90") {
  std::vector<std::string> unserved;
  const auto built = all_variants(specs(), {"t4", "a100", "h200"}, &unserved);
  for (const std::string& u : unserved)
    FAIL_CHECK("no variant for " << u);
  for (const std::string& f : nvrtc_failures(built))
    FAIL_CHECK(f);
}

TEST_CASE("reduce variants match the reference on the emulator") {
  const auto built = all_variants(specs(), {"h200"});
  REQUIRE(built.size() >= specs().size());
  for (const KernelCheck& r : emu_checks(built, temp_dir("kiln-reduce"))) {
    INFO(r.node << ": " << r.kernel << " rel " << r.rel << " " << r.error);
    CHECK(r.pass);
    // max forward picks an element: exact.
    if (r.node.starts_with("reduce_max.forward")) CHECK(r.rel == 0);
  }
}
