// tf32 operands rounded once (generator/rewrite/tf32_operands.cpp) as the implicit GEMM's
// template sees them: an instance with A_TF32 (x arrives rounded: no cvt of A's fragments)
// gives, on x its producer rounded, the bits of the instance that rounds A itself; one with
// Y_TF32 stores exactly the tf32 rounding of what the plain instance stores (paired stores,
// and an odd O's single ones); and such instances compile with NVRTC for sm_80 and sm_90.
#include "tests/kernels/harness.hpp"

#include "generator/compile/compile_dir.hpp"
#include "runtime/half.hpp"
#include "runtime/tensor.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

using namespace kiln;
using namespace kiln::test;

namespace {

struct Case {
  std::string label;
  int64_t n, c, h, w, o, k, pad;
  bool bias, residual, relu;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"c32 3x3 p1 o40 res", 2, 32, 6, 5, 40, 3, 1, true, true, true},
      {"c16 1x1 o17 odd", 2, 16, 4, 4, 17, 1, 0, true, false, false},
  };
  return c;
}

StepSpec conv_spec(const Case& c) {
  Attrs a;
  a.out_channels = c.o;
  a.kernel = {c.k, c.k};
  a.padding = {c.pad, c.pad};
  a.bias = c.bias;
  StepSpec s{c.label + " f32", Fn::conv2d_forward, OpKind::conv2d, a, {}};
  const Shape y{c.n, c.o, c.h + 2 * c.pad - c.k + 1, c.w + 2 * c.pad - c.k + 1};
  s.args.push_back({"x", {c.n, c.c, c.h, c.w}, DType::f32, Layout::nhwc});
  s.args.push_back({"w", {c.o, c.c, c.k, c.k}, DType::f32, Layout::nhwc});
  if (c.bias) s.args.push_back({"b", {c.o}, DType::f32});
  if (c.residual) s.args.push_back({"residual", y, DType::f32, Layout::nhwc});
  s.args.push_back({"y", y, DType::f32, Layout::nhwc});
  s.epilogue.activation = c.relu ? Activation::relu : Activation::none;
  return s;
}

// The instance with one more constant switched on, named for it.
Built with(Built b, const char* constant, const char* tag) {
  REQUIRE_FALSE(find_cfg(b.variant, constant));
  cfg_bool(b.variant, constant, true);
  b.variant.name += tag;
  return b;
}

Tensor rounded(Tensor t) {
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set(i, double(round_to_tf32(float(t.get(i)))));
  return t;
}

} // namespace

TEST_CASE("implicit GEMM on the emulator: A_TF32 reads rounded x as is, Y_TF32 stores rounded y") {
  for (const Case& c : cases()) {
    std::vector<Built> all = all_variants({conv_spec(c)}, {"h200"});
    std::erase_if(all, [](const Built& b) { return b.variant.family != "conv2d_implicit_gemm"; });
    REQUIRE(all.size() >= 2);
    for (const Built& plain : {all.front(), all.back()}) { // the largest and smallest tiles
      INFO(plain.variant.name);
      const Built a = with(plain, "A_TF32", "_xtf32"), y = with(plain, "Y_TF32", "_ytf32");
      const std::string dir = temp_dir("kiln-igemm-tf32");
      emu_library({plain, a, y}, dir);
      const std::string lib = emu_library_path(dir);
      std::map<std::string, Tensor> in = random_inputs(plain, 5);
      in.insert_or_assign("x", rounded(in.at("x"))); // as a Y_TF32 producer left it
      const Tensor base = emu_run(plain, lib, in, "y");
      CHECK(bytes_of(emu_run(a, lib, in, "y")) == bytes_of(base));
      CHECK(bytes_of(emu_run(y, lib, in, "y")) == bytes_of(rounded(base)));
      // Unrounded x read as rounded is not the same computation: the test can fail.
      std::map<std::string, Tensor> raw = random_inputs(plain, 5);
      CHECK(bytes_of(emu_run(a, lib, raw, "y")) != bytes_of(emu_run(plain, lib, raw, "y")));
    }
  }
}

TEST_CASE("implicit GEMM instances with A_TF32 and Y_TF32 compile with NVRTC for sm_80 and sm_90") {
  std::vector<Built> built;
  for (const Case& c : cases())
    for (Built& b : all_variants({conv_spec(c)}, {"a100", "h200"}))
      if (b.variant.family == "conv2d_implicit_gemm" &&
          (built.empty() || built.back().spec.label != b.spec.label || built.back().gpu != b.gpu))
        built.push_back(with(with(b, "A_TF32", "_xtf32"), "Y_TF32", "_ytf32"));
  CHECK(built.size() == 4);
  for (const std::string& f : nvrtc_failures(built))
    FAIL_CHECK(f);
}
