// templates/dense/layernorm.cuh: the forward, the backward (with and without writing the
// per-position statistics, accumulating or not), the parameter reduction and
// layernorm_invstd's forward and backward (accumulating or not), channel-major
// and channels-last, 2-D and 4-D, short and long channel rows. Every variant compiles for
// sm_75, sm_80 and sm_90 and matches the f64 reference on the emulator with all checks on
// (tolerances: DESIGN.md 6, fp32 1e-5, fp16/bf16 1e-2).
#include "tests/kernels/harness.hpp"

#include <doctest/doctest.h>

using namespace kiln;
using namespace kiln::test;

namespace {

std::string label(const char* fn, DType t, const Shape& x, Layout l, const char* extra = "") {
  return std::string(fn) + " " + std::string(dtype_name(t)) + " " + shape_str(x) +
         (l == Layout::nhwc ? " nhwc" : "") + extra;
}

Shape stats_of(Shape x) {
  x[1] = 1;
  return x;
}

StepSpec ln_forward(DType t, Shape x, Layout l, double eps = 1e-5) {
  const Shape c{x[1]};
  StepSpec s{label("layernorm.forward", t, x, l), Fn::layernorm_forward, OpKind::layernorm};
  s.args = {{"x", x, t, l}, {"weight", c, t}, {"bias", c, t}, {"y", x, t, l}};
  s.attrs.eps = eps;
  return s;
}

StepSpec ln_backward(DType t, Shape x, Layout l, bool stats, bool acc) {
  const Shape c{x[1]};
  StepSpec s{label("layernorm.backward", t, x, l,
                   stats ? (acc ? " stats acc" : " stats") : (acc ? " acc" : "")),
             Fn::layernorm_backward, OpKind::layernorm};
  s.args = {{"x", x, t, l}, {"dy", x, t, l}, {"weight", c, t}, {"dx", x, t, l}};
  if (stats)
    s.args.insert(s.args.end(), {{"mean", stats_of(x), t, l}, {"invstd", stats_of(x), t, l}});
  s.accumulate = acc;
  return s;
}

StepSpec ln_params(DType t, Shape x, Layout l, bool acc) {
  const Shape c{x[1]};
  StepSpec s{label("layernorm.backward_params", t, x, l, acc ? " acc" : ""),
             Fn::layernorm_backward_params, OpKind::layernorm};
  s.args = {{"x", x, t, l},
            {"dy", x, t, l},
            {"mean", stats_of(x), t, l},
            {"invstd", stats_of(x), t, l},
            {"dweight", c, t},
            {"dbias", c, t}};
  s.accumulate = acc;
  return s;
}

StepSpec invstd_forward(DType t, Shape x, Layout l, double eps = 1e-5) {
  StepSpec s{label("layernorm_invstd.forward", t, x, l), Fn::layernorm_invstd_forward,
             OpKind::layernorm_invstd};
  s.args = {{"x", x, t, l}, {"y", stats_of(x), t, l}};
  s.attrs.eps = eps;
  return s;
}

StepSpec invstd_backward(DType t, Shape x, Layout l, bool acc) {
  StepSpec s{label("layernorm_invstd.backward", t, x, l, acc ? " acc" : ""),
             Fn::layernorm_invstd_backward, OpKind::layernorm_invstd};
  s.args = {{"x", x, t, l}, {"dy", stats_of(x), t, l}, {"dx", x, t, l}};
  s.accumulate = acc;
  return s;
}

std::vector<StepSpec> specs() {
  const Layout nchw = Layout::nchw, nhwc = Layout::nhwc;
  std::vector<StepSpec> s;
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    const bool f32 = t == DType::f32;
    s.push_back(ln_forward(t, {2, 6, 3, 4}, nchw));
    s.push_back(ln_forward(t, {2, 6, 3, 4}, nhwc));
    s.push_back(ln_backward(t, {2, 6, 3, 4}, nhwc, true, false));
    s.push_back(ln_params(t, {2, 6, 3, 4}, nhwc, false));
    s.push_back(invstd_forward(t, {2, 6, 3, 4}, nchw));
    s.push_back(invstd_backward(t, {2, 6, 3, 4}, nhwc, false));
    if (f32) {
      s.push_back(ln_forward(t, {3, 37}, nchw, 1e-6));
      s.push_back(ln_forward(t, {1, 96, 5, 3}, nhwc, 1e-6)); // ConvNeXt's width: 3 lanes each
      s.push_back(ln_backward(t, {2, 6, 3, 4}, nchw, false, true));
      s.push_back(ln_backward(t, {2, 6, 3, 4}, nchw, true, false));
      s.push_back(ln_backward(t, {1, 96, 5, 3}, nhwc, false, false));
      s.push_back(ln_backward(t, {3, 37}, nchw, true, true));
      s.push_back(ln_params(t, {2, 6, 3, 4}, nchw, true));
      s.push_back(ln_params(t, {1, 96, 5, 3}, nhwc, true));
      s.push_back(ln_params(t, {3, 37}, nchw, false));
      s.push_back(ln_params(t, {2, 3, 30, 30}, nchw, false)); // many positions per channel
      s.push_back(invstd_forward(t, {1, 96, 5, 3}, nhwc, 1e-6));
      s.push_back(invstd_forward(t, {3, 37}, nchw));
      s.push_back(invstd_backward(t, {2, 6, 3, 4}, nchw, true));
      s.push_back(invstd_backward(t, {1, 96, 5, 3}, nhwc, false));
      s.push_back(invstd_backward(t, {3, 37}, nchw, true));
    }
  }
  return s;
}

} // namespace

TEST_CASE("layernorm variants compile with NVRTC for sm_75, sm_80 and sm_90") {
  std::vector<std::string> unserved;
  const auto built = all_variants(specs(), {"t4", "a100", "h200"}, &unserved);
  for (const std::string& u : unserved)
    FAIL_CHECK("no variant for " << u);
  for (const std::string& f : nvrtc_failures(built))
    FAIL_CHECK(f);
}

TEST_CASE("layernorm variants match the reference on the emulator") {
  const auto built = all_variants(specs(), {"h200"});
  REQUIRE(built.size() >= specs().size());
  for (const KernelCheck& r : emu_checks(built, temp_dir("kiln-layernorm"))) {
    INFO(r.node << ": " << r.kernel << " rel " << r.rel << " " << r.error);
    CHECK(r.pass);
  }
}
