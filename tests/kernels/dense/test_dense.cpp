// The dense group: batchnorm (inference, training forward, backward, and those over chunks of
// rows with batchnorm.partials), linear (forward,
// backward data and weight), softmax and softmax cross-entropy. Every variant compiles for
// sm_75, sm_80 and sm_90 without spilling, and matches the f64 reference on the emulator
// with all checks on (tolerances: DESIGN.md 6, fp32 1e-5, fp16/bf16 1e-2).
#include "tests/kernels/harness.hpp"

#include "generator/compile/compile_dir.hpp"
#include "runtime/emu/backend.hpp"
#include "runtime/executor.hpp"
#include "runtime/tensor.hpp"

#include <algorithm>
#include <cmath>
#include <doctest/doctest.h>

using namespace kiln;
using namespace kiln::test;

namespace {

const DType kTypes[] = {DType::f32, DType::f16, DType::bf16};

std::string tag(DType t) { return std::string(dtype_name(t)); }

// Batchnorm on x (2-D or 4-D); params [C].
StepSpec bn_forward(DType t, Shape x, Layout l, bool relu, double eps = 1e-5) {
  const Shape c{x[1]};
  StepSpec s{"batchnorm.forward " + tag(t) + " " + shape_str(x) +
                 (l == Layout::nhwc ? " nhwc" : "") + (relu ? " relu" : ""),
             Fn::batchnorm_forward,
             OpKind::batchnorm,
             {},
             {{"x", x, t, l},
              {"weight", c, t},
              {"bias", c, t},
              {"running_mean", c, t},
              {"running_var", c, t},
              {"y", x, t, l}}};
  s.attrs.eps = eps;
  s.epilogue.activation = relu ? Activation::relu : Activation::none;
  return s;
}

// `stats`: the step has the saved statistics (mean, invstd): forward_train writes them, the
// backward reads them (without, it recomputes them from x).
StepSpec bn_train(DType t, Shape x, Layout l, bool stats, double eps = 1e-5) {
  const Shape c{x[1]};
  StepSpec s{"batchnorm.forward_train " + tag(t) + " " + shape_str(x) +
                 (l == Layout::nhwc ? " nhwc" : "") + (stats ? " stats" : ""),
             Fn::batchnorm_forward_train, OpKind::batchnorm};
  s.args = {{"x", x, t, l}, {"weight", c, t}, {"bias", c, t}, {"y", x, t, l}};
  if (stats) s.args.insert(s.args.end(), {{"mean", c, t}, {"invstd", c, t}});
  s.attrs.eps = eps;
  return s;
}

StepSpec bn_backward(DType t, Shape x, Layout l, bool stats, bool acc, double eps = 1e-5) {
  const Shape c{x[1]};
  StepSpec s{"batchnorm.backward " + tag(t) + " " + shape_str(x) +
                 (l == Layout::nhwc ? " nhwc" : "") + (stats ? " saved" : " recompute") +
                 (acc ? " acc" : ""),
             Fn::batchnorm_backward, OpKind::batchnorm};
  s.args = {{"x", x, t, l}, {"dy", x, t, l}, {"weight", c, t}};
  if (stats) s.args.insert(s.args.end(), {{"mean", c, t}, {"invstd", c, t}});
  s.args.insert(s.args.end(), {{"dx", x, t, l}, {"dweight", c, t}, {"dbias", c, t}});
  s.attrs.eps = eps;
  s.accumulate = acc;
  return s;
}

// batchnorm.partials: the sums of `chunks` chunks of x's rows (and dy's with `dy`).
StepSpec bn_partials(DType t, Shape x, Layout l, int64_t chunks, bool dy) {
  StepSpec s{"batchnorm.partials " + tag(t) + " " + shape_str(x) +
                 (l == Layout::nhwc ? " nhwc" : "") + " r" + std::to_string(chunks) +
                 (dy ? " dy" : ""),
             Fn::batchnorm_partials, OpKind::batchnorm};
  s.args = {{"x", x, t, l}};
  if (dy) s.args.push_back({"dy", x, t, l});
  s.args.push_back({"partial", {chunks, dy ? 4 : 2, x[1]}, DType::f32});
  return s;
}

// A batchnorm.forward_train or .backward reading those sums.
StepSpec chunked(StepSpec s, int64_t chunks) {
  const bool backward = s.fn == Fn::batchnorm_backward;
  const Shape& x = s.args[0].shape;
  s.label += " chunked r" + std::to_string(chunks);
  s.args.push_back({"partial", {chunks, backward ? 4 : 2, x[1]}, DType::f32});
  return s;
}

// linear: x [n, f], w [k, f].
StepSpec lin_forward(DType t, int64_t n, int64_t f, int64_t k, bool bias, bool relu) {
  StepSpec s{"linear.forward " + tag(t) + " " + shape_str({n, f}) + "x" + shape_str({k, f}) +
                 (bias ? " bias" : "") + (relu ? " relu" : ""),
             Fn::linear_forward,
             OpKind::linear,
             {},
             {{"x", {n, f}, t}, {"w", {k, f}, t}}};
  if (bias) s.args.push_back({"b", {k}, t});
  s.args.push_back({"y", {n, k}, t});
  s.attrs.out_features = k;
  s.attrs.bias = bias;
  s.epilogue.activation = relu ? Activation::relu : Activation::none;
  return s;
}

StepSpec lin_backward_data(DType t, int64_t n, int64_t f, int64_t k, bool acc) {
  StepSpec s{"linear.backward_data " + tag(t) + " " + shape_str({n, f}) + "x" + shape_str({k, f}) +
                 (acc ? " acc" : ""),
             Fn::linear_backward_data,
             OpKind::linear,
             {},
             {{"dy", {n, k}, t}, {"w", {k, f}, t}, {"dx", {n, f}, t}}};
  s.attrs.out_features = k;
  s.accumulate = acc;
  return s;
}

StepSpec lin_backward_weight(DType t, int64_t n, int64_t f, int64_t k, bool acc) {
  StepSpec s{"linear.backward_weight " + tag(t) + " " + shape_str({n, f}) + "x" +
                 shape_str({k, f}) + (acc ? " acc" : ""),
             Fn::linear_backward_weight,
             OpKind::linear,
             {},
             {{"x", {n, f}, t}, {"dy", {n, k}, t}, {"dw", {k, f}, t}}};
  s.attrs.out_features = k;
  s.accumulate = acc;
  return s;
}

StepSpec sm_forward(DType t, Shape x, Layout l) {
  return {"softmax.forward " + tag(t) + " " + shape_str(x) + (l == Layout::nhwc ? " nhwc" : ""),
          Fn::softmax_forward,
          OpKind::softmax,
          {},
          {{"x", x, t, l}, {"y", x, t, l}}};
}

StepSpec sm_backward(DType t, Shape x, Layout l, bool acc) {
  StepSpec s{"softmax.backward " + tag(t) + " " + shape_str(x) +
                 (l == Layout::nhwc ? " nhwc" : "") + (acc ? " acc" : ""),
             Fn::softmax_backward,
             OpKind::softmax,
             {},
             {{"y", x, t, l}, {"dy", x, t, l}, {"dx", x, t, l}}};
  s.accumulate = acc;
  return s;
}

Shape targets_of(Shape x) {
  x.erase(x.begin() + 1);
  return x;
}

StepSpec xent_forward(DType t, Shape x, Layout l) {
  return {"softmax_xent.forward " + tag(t) + " " + shape_str(x) +
              (l == Layout::nhwc ? " nhwc" : ""),
          Fn::softmax_xent_forward,
          OpKind::softmax,
          {},
          {{"logits", x, t, l},
           {"target", targets_of(x), DType::i64},
           {"probs", x, t, l},
           {"loss", {1}, t}}};
}

StepSpec xent_backward(DType t, Shape x, Layout l, bool acc) {
  StepSpec s{"softmax_xent.backward " + tag(t) + " " + shape_str(x) +
                 (l == Layout::nhwc ? " nhwc" : "") + (acc ? " acc" : ""),
             Fn::softmax_xent_backward,
             OpKind::softmax,
             {},
             {{"probs", x, t, l}, {"target", targets_of(x), DType::i64}, {"dlogits", x, t, l}}};
  s.accumulate = acc;
  return s;
}

// Representative specs: odd sizes, batch 1 and 3, 2-D and 4-D, both layouts, relu and
// accumulate on and off, every dtype. `large` adds sizes too slow for the emulator.
std::vector<StepSpec> specs(bool large) {
  std::vector<StepSpec> s;
  const Layout nchw = Layout::nchw, nhwc = Layout::nhwc;
  for (DType t : kTypes) {
    const bool f32 = t == DType::f32;
    // batchnorm
    s.push_back(bn_forward(t, {3, 5, 7, 3}, nchw, true));
    s.push_back(bn_forward(t, {3, 5, 7, 3}, nhwc, false));
    s.push_back(bn_forward(t, {3, 37}, nchw, f32, 1e-3));
    s.push_back(bn_train(t, {3, 5, 7, 3}, nchw, true));
    s.push_back(bn_train(t, {3, 37}, nchw, false, 1e-3));
    s.push_back(bn_backward(t, {3, 5, 7, 3}, nchw, true, !f32));
    s.push_back(bn_backward(t, {3, 37}, nchw, false, f32, 1e-3));
    if (f32) {
      s.push_back(bn_forward(t, {1, 7, 5, 5}, nchw, false));
      s.push_back(bn_train(t, {1, 7, 5, 5}, nchw, false));
      s.push_back(bn_train(t, {3, 5, 4, 3}, nhwc, true));
      s.push_back(bn_backward(t, {1, 7, 5, 5}, nchw, false, false));
      s.push_back(bn_backward(t, {3, 5, 4, 3}, nhwc, true, true));
      s.push_back(bn_backward(t, {3, 37}, nchw, true, false));
      // long channels: 1024-thread blocks are offered too
      s.push_back(bn_train(t, {2, 3, 30, 30}, nchw, true));
      s.push_back(bn_backward(t, {2, 3, 30, 30}, nchw, false, false));
      s.push_back(bn_train(t, {300, 5}, nchw, false));
      s.push_back(bn_backward(t, {300, 5}, nchw, true, true));
    }
    // batchnorm over chunks of rows (channels-last training)
    s.push_back(bn_partials(t, {2, 40, 6, 5}, nhwc, 3, false));
    s.push_back(bn_partials(t, {2, 40, 6, 5}, nhwc, 3, true));
    s.push_back(chunked(bn_train(t, {2, 40, 6, 5}, nhwc, f32), 3));
    s.push_back(chunked(bn_backward(t, {2, 40, 6, 5}, nhwc, false, !f32), 3));
    // a resnet block's end, relu(bn(x) + shortcut), in the chunked forward's epilogue
    // (rewrite/batchnorm_activation.cpp), with and without the saved statistics
    for (bool stats : {false, true}) {
      StepSpec fused = chunked(bn_train(t, {2, 40, 6, 5}, nhwc, stats), 3);
      fused.label += " residual relu";
      fused.args.push_back({"residual", {2, 40, 6, 5}, t, nhwc});
      fused.epilogue.activation = Activation::relu;
      s.push_back(fused);
    }
    // 16-byte packs of a row's channels (VEC) over several batches of rows a thread, the last
    // batch partial, and a relu's backward fused in (dy masked by its output, relu_y)
    {
      const Shape x{4, 64, 12, 12};
      const auto masked = [&](StepSpec st) {
        st.label += " relu_y";
        st.args.push_back({"relu_y", x, t, nhwc});
        return st;
      };
      s.push_back(masked(bn_partials(t, x, nhwc, 2, true)));
      s.push_back(chunked(bn_train(t, x, nhwc, !f32), 2));
      s.push_back(masked(chunked(bn_backward(t, x, nhwc, false, f32), 2)));
    }
    if (f32) {
      s.push_back(bn_partials(t, {300, 5}, nchw, 4, true));
      s.push_back(chunked(bn_train(t, {300, 5}, nchw, false), 4));
      s.push_back(chunked(bn_backward(t, {300, 5}, nchw, false, false), 4));
    }
    // linear
    s.push_back(lin_forward(t, 3, 37, 5, true, !f32));
    s.push_back(lin_backward_data(t, 3, 37, 5, f32));
    s.push_back(lin_backward_weight(t, 3, 37, 5, !f32));
    if (f32) {
      s.push_back(lin_forward(t, 3, 37, 5, false, false));
      s.push_back(lin_forward(t, 5, 67, 70, true, true));
      s.push_back(lin_backward_data(t, 5, 67, 70, false));
      s.push_back(lin_backward_weight(t, 5, 67, 70, true));
      s.push_back(lin_forward(t, 1, 1000, 8, true, false));
      s.push_back(lin_forward(t, 11, 37, 5, true, false)); // a partial group of batch rows
    }
    if (large && f32) {
      s.push_back(lin_forward(t, 2, 10000, 2, true, false));
      s.push_back(lin_backward_data(t, 2, 10000, 2, true));
      s.push_back(lin_backward_weight(t, 2, 10000, 2, false));
      s.push_back(lin_forward(t, 1, 10000, 128, true, true));
    }
    // softmax
    s.push_back(sm_forward(t, {3, 10}, nchw));
    s.push_back(sm_forward(t, {2, 5, 3, 4}, nchw));
    s.push_back(sm_backward(t, {3, 10}, nchw, f32));
    s.push_back(sm_backward(t, {2, 5, 3, 4}, nchw, !f32));
    if (f32) {
      s.push_back(sm_forward(t, {2, 75}, nchw));
      s.push_back(sm_forward(t, {2, 5, 3, 4}, nhwc));
      s.push_back(sm_forward(t, {2, 5, 7}, nchw));
      s.push_back(sm_backward(t, {2, 5, 3, 4}, nhwc, false));
    }
    // softmax cross-entropy
    s.push_back(xent_forward(t, {3, 10}, nchw));
    s.push_back(xent_forward(t, {2, 5, 3, 4}, nchw));
    s.push_back(xent_backward(t, {3, 10}, nchw, !f32));
    s.push_back(xent_backward(t, {2, 5, 3, 4}, nchw, f32));
    if (f32) {
      s.push_back(xent_forward(t, {1, 3, 3, 5}, nhwc));
      s.push_back(xent_backward(t, {1, 3, 3, 5}, nhwc, true));
    }
  }
  return s;
}

} // namespace

TEST_CASE("dense variants compile with NVRTC for sm_75, sm_80 and sm_90") {
  std::vector<std::string> unserved;
  const auto built = all_variants(specs(true), {"t4", "a100", "h200"}, &unserved);
  for (const std::string& u : unserved)
    FAIL_CHECK("no variant for " << u);
  const auto failures = nvrtc_failures(built);
  for (const std::string& f : failures)
    FAIL_CHECK(f);
}

TEST_CASE("dense variants match the reference on the emulator") {
  const auto built = all_variants(specs(false), {"h200"});
  REQUIRE(built.size() >= specs(false).size());
  // The chunked batchnorm's packed forms are among them: 8 f16 or bf16 channels, 4 f32 ones.
  for (const char* packed :
       {"batchnorm_partials_f16_nhwc_n4c64h12w12_dy_relumask_r2_cols8_v8",
        "batchnorm_backward_chunked_bf16_nhwc_n4c64h12w12_eps1em05_relumask_r2_cols8_v8",
        "batchnorm_forward_train_chunked_f32_nhwc_n4c64h12w12_eps1em05_r2_cols16_v4",
        "batchnorm_forward_train_chunked_f32_nhwc_n4c64h12w12_eps1em05_r2_cols8_v4"})
    CHECK_MESSAGE(std::any_of(built.begin(), built.end(),
                              [&](const Built& b) { return b.variant.name.starts_with(packed); }),
                  packed);
  for (const KernelCheck& r : emu_checks(built, temp_dir("kiln-dense"))) {
    INFO(r.node << ": " << r.kernel << " rel " << r.rel << " " << r.error);
    CHECK(r.pass);
  }
}

// The reference throws on a target outside [0, K); a kernel cannot, so it poisons the
// results instead: a NaN loss (forward) and NaN gradients for that position (backward).
TEST_CASE(
    "softmax_xent on the emulator: an out-of-range target gives a NaN loss and NaN gradients") {
  const Shape x{3, 10};
  const std::vector<StepSpec> sp = {xent_forward(DType::f32, x, Layout::nchw),
                                    xent_backward(DType::f32, x, Layout::nchw, false)};
  const auto built = all_variants(sp, {"h200"});
  REQUIRE(built.size() == 2);
  const std::string dir = temp_dir("kiln-dense-xent");
  for (const KernelCheck& r : emu_checks(built, dir))
    CHECK(r.pass); // valid targets: as the reference
  for (const Built& b : built) {
    const Plan p = spec_plan(b.spec);
    Kernel k;
    k.name = k.entry = b.variant.name;
    k.image = "kernels/" + k.name + ".cubin";
    k.grid = b.variant.grid;
    k.block = b.variant.block;
    k.args = b.variant.args;
    const Plan dp = single_step_plan(p, p.phases[0].steps[0], &k, false);
    EmuBackend emu(emu_library_path(dir));
    Executor ex(dp, emu);
    const Step& st = dp.phases[0].steps[0];
    const bool fwd = st.fn == Fn::softmax_xent_forward;
    Tensor in(DType::f32, x), target(DType::i64, {3});
    for (int64_t i = 0; i < in.numel(); ++i)
      in.set(i, fwd ? 0.1 * double(i % 7) : 0.05);
    target.set(0, 2);
    target.set(1, 10); // == K: out of range
    target.set(2, 0);
    ex.write(st.need(fwd ? "logits" : "probs"), in);
    ex.write(st.need("target"), target);
    ex.run("forward");
    if (fwd) {
      CHECK(std::isnan(ex.read(st.need("loss")).get(0)));
      const Tensor probs = ex.read(st.need("probs"));
      for (int64_t i = 0; i < probs.numel(); ++i)
        CHECK(std::isfinite(probs.get(i)));
    } else {
      const Tensor d = ex.read(st.need("dlogits"));
      for (int64_t i = 0; i < d.numel(); ++i)
        CHECK(std::isnan(d.get(i)) == (i / 10 == 1));
    }
  }
}
