// The spatial families (maxpool2d, avgpool2d, adaptive_avgpool2d, resize, pad, space_to_depth,
// concat): every variant compiles for sm_75, sm_80 and sm_90 and matches the f64 reference on the
// emulator (all checks on). Element types and layouts rotate over the specs so that each
// function meets f32, f16 and bf16 in NCHW and NHWC without the full cross product.
#include "tests/kernels/harness.hpp"

#include "runtime/op.hpp"

#include <doctest/doctest.h>
#include <set>

using namespace kiln;
using namespace kiln::test;

namespace {

struct Combo {
  DType t;
  Layout l;
};
// The six (dtype, layout) pairs; spec i of a function takes combo(i + shift).
Combo combo(int i) {
  static const DType types[] = {DType::f32, DType::f16, DType::bf16};
  static const Layout layouts[] = {Layout::nchw, Layout::nhwc};
  return {types[i % 3], layouts[(i / 3) % 2]};
}

std::string tag(const Combo& c, bool acc = false) {
  return std::string(dtype_name(c.t)) + " " + std::string(layout_name(c.l)) + (acc ? " acc" : "");
}

Shape out_shape(OpKind op, const Attrs& a, const Shape& x) {
  return infer_shape(op, a, std::span<const Shape>(&x, 1));
}

struct Window {
  Shape x;
  int64_t kh, kw, sh, sw, ph, pw;
  bool ceil;
};

Attrs pool_attrs(const Window& w, bool count_include_pad) {
  Attrs a;
  a.kernel = {w.kh, w.kw};
  a.stride = {w.sh, w.sw};
  a.padding = {w.ph, w.pw};
  a.ceil_mode = w.ceil;
  a.count_include_pad = count_include_pad;
  return a;
}

std::string window_label(const Window& w) {
  return std::to_string(w.x[2]) + "x" + std::to_string(w.x[3]) + " k" + std::to_string(w.kh) + "x" +
         std::to_string(w.kw) + " s" + std::to_string(w.sh) + "x" + std::to_string(w.sw) + " p" +
         std::to_string(w.ph) + "x" + std::to_string(w.pw) + (w.ceil ? " ceil" : "");
}

void pool_specs(std::vector<StepSpec>& s) {
  const std::vector<Window> windows = {
      {{2, 3, 7, 9}, 2, 2, 2, 2, 0, 0, false},
      {{2, 3, 13, 11}, 3, 3, 2, 2, 1, 1, true},
      {{2, 3, 6, 5}, 3, 3, 1, 1, 1, 1, false},
      {{2, 3, 7, 9}, 3, 2, 3, 2, 1, 0, true},
      {{2, 3, 13, 11}, 3, 3, 3, 3, 0, 0, true},
      {{2, 3, 6, 5}, 2, 3, 1, 2, 1, 1, true},
      {{1, 37, 6, 5}, 3, 3, 2, 2, 1, 1, false},
      {{2, 2, 9, 37}, 3, 3, 1, 1, 1, 1, false},
      // Channels in 16 bytes (8 f16/bf16, 4 f32) and in 4 or 8 bytes: the vector forms in NHWC.
      {{2, 24, 9, 7}, 3, 3, 2, 2, 1, 1, true},
      {{1, 12, 6, 6}, 2, 2, 2, 2, 0, 0, false},
      {{2, 16, 7, 7}, 3, 3, 2, 2, 1, 1, false},
      {{1, 6, 5, 6}, 3, 2, 1, 2, 1, 0, true},
  };
  for (int i = 0; i < int(windows.size()); ++i) {
    const Window& w = windows[size_t(i)];
    const bool acc = i % 2 == 1, cip = i % 3 != 1;
    const std::string wl = window_label(w);
    // maxpool2d
    const Attrs am = pool_attrs(w, true);
    const Shape ym = out_shape(OpKind::maxpool2d, am, w.x);
    Combo c = combo(i);
    s.push_back({"maxpool2d.forward " + wl + " " + tag(c),
                 Fn::maxpool2d_forward,
                 OpKind::maxpool2d,
                 am,
                 {{"x", w.x, c.t, c.l}, {"y", ym, c.t, c.l}}});
    // The last windows test maxpool2d.backward's tiles: 37 channels in NHWC (a partial
    // channel group), 37 columns in NCHW (two tiles across).
    c = i == 6   ? Combo{DType::f16, Layout::nhwc}
        : i == 7 ? Combo{DType::bf16, Layout::nchw}
                 : combo(i + 1);
    StepSpec mb{"maxpool2d.backward " + wl + " " + tag(c, acc),
                Fn::maxpool2d_backward,
                OpKind::maxpool2d,
                am,
                {{"x", w.x, c.t, c.l}, {"dy", ym, c.t, c.l}, {"dx", w.x, c.t, c.l}}};
    mb.accumulate = acc;
    s.push_back(mb);
    if (i == 6 || i == 7) continue; // (those two are maxpool.backward's tiles)
    // avgpool2d
    const Attrs aa = pool_attrs(w, cip);
    const Shape ya = out_shape(OpKind::avgpool2d, aa, w.x);
    const std::string pad = cip ? " count_include_pad" : " exclude_pad";
    c = combo(i + 2);
    s.push_back({"avgpool2d.forward " + wl + pad + " " + tag(c),
                 Fn::avgpool2d_forward,
                 OpKind::avgpool2d,
                 aa,
                 {{"x", w.x, c.t, c.l}, {"y", ya, c.t, c.l}}});
    c = combo(i + 3);
    StepSpec ab{"avgpool2d.backward " + wl + pad + " " + tag(c, !acc),
                Fn::avgpool2d_backward,
                OpKind::avgpool2d,
                aa,
                {{"dy", ya, c.t, c.l}, {"dx", w.x, c.t, c.l}}};
    ab.accumulate = !acc;
    s.push_back(ab);
  }
}

void adaptive_specs(std::vector<StepSpec>& s) {
  struct Case {
    Shape x;
    int64_t oh, ow;
    bool global;
  };
  const std::vector<Case> cases = {
      {{2, 3, 10, 10}, 7, 7, false}, {{2, 3, 7, 7}, 3, 3, false}, {{2, 3, 5, 5}, 5, 5, false},
      {{2, 3, 1, 1}, 1, 1, true},    {{2, 3, 9, 13}, 1, 1, true}, {{2, 37, 9, 13}, 1, 1, true},
      {{1, 3, 10, 7}, 7, 3, false},  {{1, 2, 3, 5}, 5, 7, false}, {{1, 2, 40, 40}, 1, 1, true},
  };
  for (int i = 0; i < int(cases.size()); ++i) {
    const Case& k = cases[size_t(i)];
    const OpKind op = k.global ? OpKind::global_avgpool : OpKind::adaptive_avgpool2d;
    Attrs a;
    a.output_size = {k.oh, k.ow};
    const Shape y = out_shape(op, a, k.x);
    const std::string label = std::to_string(k.x[1]) + "x" + std::to_string(k.x[2]) + "x" +
                              std::to_string(k.x[3]) + "->" + std::to_string(k.oh) + "x" +
                              std::to_string(k.ow) + (k.global ? " global" : "");
    // The 40x40 window exercises the block-per-output reduction (NCHW), 37 channels the
    // NHWC one with channel groups across images and a partial last block.
    const bool big = k.x[2] == 40;
    Combo c = big      ? Combo{DType::f32, Layout::nchw}
              : i == 5 ? Combo{DType::bf16, Layout::nhwc}
                       : combo(i);
    s.push_back({"adaptive_avgpool2d.forward " + label + " " + tag(c),
                 Fn::adaptive_avgpool2d_forward,
                 op,
                 a,
                 {{"x", k.x, c.t, c.l}, {"y", y, c.t, c.l}}});
    if (big) continue;
    c = combo(i + 3);
    StepSpec b{"adaptive_avgpool2d.backward " + label + " " + tag(c, i % 2 == 0),
               Fn::adaptive_avgpool2d_backward,
               op,
               a,
               {{"dy", y, c.t, c.l}, {"dx", k.x, c.t, c.l}}};
    b.accumulate = i % 2 == 0;
    s.push_back(b);
  }
}

// resize: nearest and bilinear under every coordinate rule and rounding, integer and
// non-integer scales, sizes, up and down (forward and the gathering backward).
void resize_specs(std::vector<StepSpec>& s) {
  struct Case {
    ResizeMode m;
    CoordinateMode c;
    NearestMode r;
    Shape x;
    Int2 size;
    Num2 scale;
  };
  using RM = ResizeMode;
  using CM = CoordinateMode;
  using NM = NearestMode;
  const Case cases[] = {
      {RM::nearest, CM::asymmetric, NM::floor, {2, 3, 5, 7}, {0, 0}, {1, 1}},
      {RM::nearest, CM::asymmetric, NM::floor, {2, 3, 5, 7}, {0, 0}, {2, 2}},
      {RM::nearest, CM::asymmetric, NM::floor, {2, 3, 5, 7}, {0, 0}, {3, 3}},
      {RM::nearest, CM::half_pixel, NM::round_prefer_floor, {2, 3, 5, 7}, {8, 3}, {0, 0}},
      {RM::nearest,
       CM::pytorch_half_pixel,
       NM::round_prefer_ceil,
       {1, 4, 6, 5},
       {0, 0},
       {0.5, 2.5}},
      {RM::nearest, CM::align_corners, NM::ceil, {2, 2, 4, 9}, {7, 4}, {0, 0}},
      {RM::linear, CM::half_pixel, NM::floor, {2, 3, 5, 7}, {0, 0}, {2, 2}},
      {RM::linear, CM::pytorch_half_pixel, NM::floor, {2, 3, 5, 7}, {1, 13}, {0, 0}},
      {RM::linear, CM::align_corners, NM::floor, {1, 5, 6, 4}, {11, 9}, {0, 0}},
      {RM::linear, CM::asymmetric, NM::floor, {2, 3, 8, 6}, {0, 0}, {0.75, 1.5}},
      {RM::linear, CM::half_pixel, NM::floor, {2, 3, 9, 8}, {0, 0}, {0.5, 0.5}},
  };
  int i = 0;
  for (const Case& k : cases) {
    Attrs a;
    a.mode = int64_t(k.m);
    a.coordinate_mode = int64_t(k.c);
    a.nearest_mode = int64_t(k.r);
    a.size = k.size;
    a.scale = k.scale;
    const Shape y = out_shape(OpKind::resize, a, k.x);
    const std::string label = "resize case " + std::to_string(i);
    Combo c = combo(i);
    s.push_back({label + ".forward " + tag(c),
                 Fn::resize_forward,
                 OpKind::resize,
                 a,
                 {{"x", k.x, c.t, c.l}, {"y", y, c.t, c.l}}});
    c = combo(i + 2);
    StepSpec b{label + ".backward " + tag(c, i % 3 == 1),
               Fn::resize_backward,
               OpKind::resize,
               a,
               {{"dy", y, c.t, c.l}, {"dx", k.x, c.t, c.l}}};
    b.accumulate = i % 3 == 1;
    s.push_back(b);
    ++i;
  }
}

// pad: constant (zero and a value), reflect, edge; uneven sides, forward and the gathering
// backward (accumulating in some).
void pad_specs(std::vector<StepSpec>& s) {
  struct Case {
    PadMode m;
    Shape x;
    Int2 begin, end;
    double value;
  };
  const Case cases[] = {
      {PadMode::constant, {2, 3, 5, 7}, {1, 1}, {1, 1}, 0},
      {PadMode::constant, {1, 4, 6, 5}, {0, 2}, {3, 0}, -0.75},
      {PadMode::reflect, {2, 3, 5, 7}, {2, 1}, {4, 6}, 0},
      {PadMode::reflect, {1, 2, 2, 9}, {1, 0}, {1, 8}, 0},
      {PadMode::edge, {2, 3, 5, 7}, {3, 0}, {1, 4}, 0},
      {PadMode::edge, {1, 5, 1, 4}, {2, 2}, {2, 1}, 0},
  };
  int i = 0;
  for (const Case& k : cases) {
    Attrs a;
    a.mode = int64_t(k.m);
    a.padding = k.begin;
    a.padding_end = k.end;
    a.value = k.value;
    const Shape y = out_shape(OpKind::pad, a, k.x);
    const std::string label = "pad case " + std::to_string(i);
    Combo c = combo(i + 1);
    s.push_back({label + ".forward " + tag(c),
                 Fn::pad_forward,
                 OpKind::pad,
                 a,
                 {{"x", k.x, c.t, c.l}, {"y", y, c.t, c.l}}});
    c = combo(i + 4);
    StepSpec b{label + ".backward " + tag(c, i % 2 == 1),
               Fn::pad_backward,
               OpKind::pad,
               a,
               {{"dy", y, c.t, c.l}, {"dx", k.x, c.t, c.l}}};
    b.accumulate = i % 2 == 1;
    s.push_back(b);
    ++i;
  }
}

// space_to_depth: x and y in each layout pair (NCHW -> NHWC is the main use: a network's image
// into a strided conv's channels-last input), a stem-like case (padding, a larger size, zero
// channels), a weight-like case (O filters as the images, the last block row half outside), a
// size that drops rows and S 3; forward and the gathering backward (accumulating in some).
void space_to_depth_specs(std::vector<StepSpec>& s) {
  struct Case {
    Shape x;
    int64_t factor;
    Int2 padding, size;
    int64_t out_channels;
  };
  const Case cases[] = {
      {{2, 3, 14, 14}, 2, {1, 1}, {8, 8}, 16}, // stem-like
      {{8, 3, 7, 7}, 2, {0, 0}, {4, 4}, 16},   // weight-like: [O, C, K, K]
      {{1, 4, 4, 6}, 2, {0, 0}, {0, 0}, 0},    // ONNX SpaceToDepth
      {{2, 2, 9, 7}, 3, {2, 1}, {2, 2}, 20},   // size drops x's last rows and columns
  };
  const Layout pairs[][2] = {{Layout::nchw, Layout::nhwc},
                             {Layout::nchw, Layout::nchw},
                             {Layout::nhwc, Layout::nhwc},
                             {Layout::nhwc, Layout::nchw}};
  const DType types[] = {DType::f32, DType::f16, DType::bf16};
  int i = 0;
  for (const Case& k : cases) {
    Attrs a;
    a.factor = k.factor;
    a.padding = k.padding;
    a.size = k.size;
    a.out_channels = k.out_channels;
    const Shape y = out_shape(OpKind::space_to_depth, a, k.x);
    for (int j = 0; j < 4; ++j) {
      // Every case in every layout pair; the element type rotates, f32 and f16 in each pair.
      const DType t = types[(i + j) % 3];
      const Layout xl = pairs[j][0], yl = pairs[j][1];
      const std::string label = "space_to_depth case " + std::to_string(i) + " " +
                                std::string(dtype_name(t)) + " " + std::string(layout_name(xl)) +
                                "->" + std::string(layout_name(yl));
      s.push_back({label + ".forward",
                   Fn::space_to_depth_forward,
                   OpKind::space_to_depth,
                   a,
                   {{"x", k.x, t, xl}, {"y", y, t, yl}}});
      const bool acc = (i + j) % 2 == 1;
      StepSpec b{label + ".backward" + (acc ? " acc" : ""),
                 Fn::space_to_depth_backward,
                 OpKind::space_to_depth,
                 a,
                 {{"dy", y, t, yl}, {"dx", k.x, t, xl}}};
      b.accumulate = acc;
      s.push_back(b);
    }
    ++i;
  }
}

void concat_specs(std::vector<StepSpec>& s) {
  struct Case {
    std::vector<Shape> xs;
  };
  const std::vector<Case> cases = {
      {{{2, 3, 5, 7}, {2, 5, 5, 7}}},
      {{{2, 2, 3, 5}, {2, 4, 3, 5}, {2, 1, 3, 5}}},
      {{{3, 7}, {3, 4}}},
      {{{2, 3, 4, 3}, {2, 6, 4, 3}, {2, 2, 4, 3}}},
      // DenseNet-like: many inputs (a kernel takes at most 15 and its output).
      {{{1, 4, 3, 2},
        {1, 2, 3, 2},
        {1, 2, 3, 2},
        {1, 3, 3, 2},
        {1, 2, 3, 2},
        {1, 1, 3, 2},
        {1, 2, 3, 2},
        {1, 5, 3, 2},
        {1, 2, 3, 2},
        {1, 2, 3, 2},
        {1, 3, 3, 2}}},
      {{{2, 3},
        {2, 1},
        {2, 2},
        {2, 4},
        {2, 1},
        {2, 2},
        {2, 3},
        {2, 1},
        {2, 2},
        {2, 1},
        {2, 2},
        {2, 3},
        {2, 1},
        {2, 2},
        {2, 5}}},
  };
  for (int i = 0; i < int(cases.size()); ++i) {
    const Case& k = cases[size_t(i)];
    const Shape y = infer_shape(OpKind::concat, Attrs{}, k.xs);
    const Combo c = combo(i * 2 + 1);
    const Layout l = y.size() == 4 ? c.l : Layout::nchw;
    std::string label = std::to_string(k.xs.size()) + " inputs " + shape_str(y);
    StepSpec f{"concat.forward " + label + " " + tag({c.t, l}),
               Fn::concat_forward,
               OpKind::concat,
               {},
               {}};
    for (size_t j = 0; j < k.xs.size(); ++j)
      f.args.push_back({"x" + std::to_string(j), k.xs[j], c.t, l});
    f.args.push_back({"y", y, c.t, l});
    s.push_back(f);
    // The backward of the last input (at its channel offset) and, with accumulate, of the first.
    const Combo cb = combo(i * 2 + 4);
    const Layout lb = y.size() == 4 ? cb.l : Layout::nchw;
    const int64_t offset = y[1] - k.xs.back()[1];
    StepSpec b{"concat.backward " + label + " at " + std::to_string(offset) + " " + tag({cb.t, lb}),
               Fn::concat_backward,
               OpKind::concat,
               {},
               {{"dy", y, cb.t, lb}, {"dx", k.xs.back(), cb.t, lb}}};
    b.params = ChannelSlice{offset};
    s.push_back(b);
    StepSpec b0{"concat.backward " + label + " at 0 " + tag({cb.t, lb}, true),
                Fn::concat_backward,
                OpKind::concat,
                {},
                {{"dy", y, cb.t, lb}, {"dx", k.xs.front(), cb.t, lb}}};
    b0.accumulate = true;
    s.push_back(b0);
  }
}

std::vector<StepSpec> specs() {
  std::vector<StepSpec> s;
  pool_specs(s);
  adaptive_specs(s);
  resize_specs(s);
  pad_specs(s);
  space_to_depth_specs(s);
  concat_specs(s);
  return s;
}

// Tensors of more than 2^31 elements (64-bit indices), compiled only.
std::vector<StepSpec> large_specs() {
  std::vector<StepSpec> s;
  const Shape x{64, 256, 512, 512};
  const DType t = DType::f16;
  for (Layout l : {Layout::nchw, Layout::nhwc}) {
    const std::string ln(layout_name(l));
    Window w{x, 3, 3, 2, 2, 1, 1, false};
    const Attrs a = pool_attrs(w, false);
    const Shape y = out_shape(OpKind::maxpool2d, a, x);
    s.push_back({"large maxpool2d.forward " + ln,
                 Fn::maxpool2d_forward,
                 OpKind::maxpool2d,
                 a,
                 {{"x", x, t, l}, {"y", y, t, l}}});
    s.push_back({"large maxpool2d.backward " + ln,
                 Fn::maxpool2d_backward,
                 OpKind::maxpool2d,
                 a,
                 {{"x", x, t, l}, {"dy", y, t, l}, {"dx", x, t, l}}});
    s.push_back({"large avgpool2d.backward " + ln,
                 Fn::avgpool2d_backward,
                 OpKind::avgpool2d,
                 a,
                 {{"dy", y, t, l}, {"dx", x, t, l}}});
    Attrs g;
    const Shape p = out_shape(OpKind::global_avgpool, g, x);
    s.push_back({"large global_avgpool.forward " + ln,
                 Fn::adaptive_avgpool2d_forward,
                 OpKind::global_avgpool,
                 g,
                 {{"x", x, t, l}, {"y", p, t, l}}});
    s.push_back({"large global_avgpool.backward " + ln,
                 Fn::adaptive_avgpool2d_backward,
                 OpKind::global_avgpool,
                 g,
                 {{"dy", p, t, l}, {"dx", x, t, l}}});
    Attrs u;
    u.scale = {2, 2};
    const Shape xu{64, 64, 512, 512}, yu = out_shape(OpKind::resize, u, xu);
    s.push_back({"large resize.backward " + ln,
                 Fn::resize_backward,
                 OpKind::resize,
                 u,
                 {{"dy", yu, t, l}, {"dx", xu, t, l}}});
    const Shape x1{64, 128, 512, 512}, yc{64, 384, 512, 512};
    s.push_back({"large concat.forward " + ln,
                 Fn::concat_forward,
                 OpKind::concat,
                 {},
                 {{"x0", x, t, l}, {"x1", x1, t, l}, {"y", yc, t, l}}});
  }
  return s;
}

} // namespace

TEST_CASE("spatial variants compile with NVRTC for sm_75, sm_80 and sm_90") {
  std::vector<std::string> unserved;
  std::vector<StepSpec> all = specs();
  for (StepSpec& l : large_specs())
    all.push_back(std::move(l));
  const auto built = all_variants(all, {"t4", "a100", "h200"}, &unserved);
  for (const std::string& u : unserved)
    FAIL_CHECK("unserved: " << u);
  const auto failures = nvrtc_failures(built);
  for (const std::string& f : failures)
    FAIL_CHECK(f);
}

TEST_CASE("spatial variants match the reference on the emulator") {
  const auto built = all_variants(specs(), {"h200"});
  std::set<std::string> functions;
  for (const Built& b : built)
    functions.insert(b.variant.function);
  CHECK(functions.size() == 15); // every template entry point is exercised
  for (const KernelCheck& r : emu_checks(built, temp_dir("kiln-spatial"))) {
    INFO(r.node << ": " << r.kernel << " rel " << r.rel << " " << r.error);
    CHECK(r.pass);
  }
}
