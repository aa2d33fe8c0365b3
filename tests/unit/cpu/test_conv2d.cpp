// conv2d: hand-computed values, a direct-definition reference over many geometries, finite-
// difference gradients for data, weight and bias, and accumulate semantics.
#include "tests/unit/cpu/cpu_test_util.hpp"

#include "runtime/error.hpp"

namespace kiln::cpu::test {

namespace {

struct ConvCase {
  int64_t N, C, H, W, O;
  Int2 kernel, stride, padding, dilation;
  int64_t groups;
};

// Strides 1/2/3, padding 0/1/2, dilation 1/2, groups 1/2/4 and depthwise, kernels 1x1..5x5
// and [h, w] pairs, odd sizes, and taps that only ever see padding.
const ConvCase conv_cases[] = {
    {1, 1, 5, 5, 1, {3, 3}, {1, 1}, {0, 0}, {1, 1}, 1},
    {2, 3, 7, 6, 4, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
    {2, 4, 9, 8, 4, {3, 3}, {2, 2}, {1, 1}, {1, 1}, 2},
    {1, 4, 11, 10, 8, {5, 5}, {3, 3}, {2, 2}, {1, 1}, 4},
    {2, 6, 8, 7, 6, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 6},   // depthwise
    {1, 3, 7, 7, 6, {3, 3}, {2, 2}, {1, 1}, {1, 1}, 3},   // depthwise, multiplier 2
    {1, 2, 9, 9, 3, {3, 3}, {1, 1}, {2, 2}, {2, 2}, 1},   // dilation 2
    {1, 3, 7, 9, 2, {1, 5}, {1, 2}, {0, 2}, {1, 1}, 1},   // 1x5
    {2, 2, 8, 5, 3, {5, 1}, {2, 1}, {2, 0}, {1, 1}, 1},   // 5x1
    {1, 2, 6, 7, 2, {2, 3}, {3, 2}, {1, 0}, {2, 1}, 1},   // 2x3, mixed stride and dilation
    {2, 4, 7, 7, 3, {1, 1}, {2, 2}, {0, 0}, {1, 1}, 1},   // 1x1 stride 2
    {1, 2, 13, 11, 2, {4, 4}, {3, 3}, {2, 2}, {1, 1}, 1}, // even kernel, stride 3
    {1, 1, 3, 3, 2, {2, 2}, {1, 1}, {2, 2}, {1, 1}, 1},   // border outputs see only padding
    {1, 4, 12, 12, 2, {3, 3}, {3, 3}, {1, 1}, {2, 2}, 2},
    {1, 2, 5, 6, 2, {5, 4}, {1, 3}, {2, 1}, {1, 2}, 2},
};

Attrs attrs(const ConvCase& c) {
  Attrs a;
  a.out_channels = c.O;
  a.kernel = c.kernel, a.stride = c.stride, a.padding = c.padding, a.dilation = c.dilation;
  a.groups = c.groups;
  return a;
}

Shape out_shape(const ConvCase& c) {
  return {c.N, c.O, window_out(c.H, c.kernel[0], c.stride[0], c.padding[0], c.dilation[0], false),
          window_out(c.W, c.kernel[1], c.stride[1], c.padding[1], c.dilation[1], false)};
}

// The definition, one output element at a time with a bounds test per tap.
TensorD naive_conv(const ConvCase& c, const TensorD& x, const TensorD& w, const TensorD* b) {
  TensorD y(out_shape(c));
  const int64_t OH = y.shape[2], OW = y.shape[3], Cg = c.C / c.groups, Og = c.O / c.groups;
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t o = 0; o < c.O; ++o)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double s = b ? (*b)[o] : 0.0;
          for (int64_t cg = 0; cg < Cg; ++cg)
            for (int64_t kh = 0; kh < c.kernel[0]; ++kh)
              for (int64_t kw = 0; kw < c.kernel[1]; ++kw) {
                const int64_t ih = oh * c.stride[0] - c.padding[0] + kh * c.dilation[0];
                const int64_t iw = ow * c.stride[1] - c.padding[1] + kw * c.dilation[1];
                if (ih < 0 || ih >= c.H || iw < 0 || iw >= c.W)
                  continue;
                const int64_t ci = (o / Og) * Cg + cg;
                s += w[((o * Cg + cg) * c.kernel[0] + kh) * c.kernel[1] + kw] *
                     x[((n * c.C + ci) * c.H + ih) * c.W + iw];
              }
          y[((n * c.O + o) * OH + oh) * OW + ow] = s;
        }
  return y;
}

struct ConvData {
  TensorD x, w, b, dy;
};

ConvData conv_data(const ConvCase& c, Rng& rng) {
  return {random_tensor({c.N, c.C, c.H, c.W}, rng),
          random_tensor({c.O, c.C / c.groups, c.kernel[0], c.kernel[1]}, rng),
          random_tensor({c.O}, rng), random_tensor(out_shape(c), rng)};
}

std::string name(const ConvCase& c) {
  return cat("conv N", c.N, " C", c.C, " ", c.H, "x", c.W, " O", c.O, " k", c.kernel[0], "x",
             c.kernel[1], " s", c.stride[0], "x", c.stride[1], " p", c.padding[0], "x",
             c.padding[1], " d", c.dilation[0], "x", c.dilation[1], " g", c.groups);
}

} // namespace

TEST_CASE("conv2d: hand-computed 1-channel 3x3 input") {
  const TensorD x({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Attrs a;
  a.out_channels = 1;
  a.kernel = {2, 2};
  const TensorD w({1, 1, 2, 2}, {1, 2, 3, 4});
  const double bias = 0.5;
  TensorD y({1, 1, 2, 2});
  conv2d<double>(a, x.cview(), w.cview(), &bias, y.view());
  CHECK(y.v == std::vector<double>{37.5, 47.5, 67.5, 77.5});

  // 3x3 box filter, stride 2, padding 1: each output sums the 2x2 corner it overlaps.
  a.kernel = {3, 3}, a.stride = {2, 2}, a.padding = {1, 1};
  const TensorD ones({1, 1, 3, 3}, 1.0);
  conv2d<double>(a, x.cview(), ones.cview(), nullptr, y.view());
  CHECK(y.v == std::vector<double>{12, 16, 24, 28});

  // Backward data of the box filter: each input counts the windows it lies in.
  const TensorD dy({1, 1, 2, 2}, 1.0);
  TensorD dx({1, 1, 3, 3});
  conv2d_backward_data<double>(a, dy.cview(), ones.cview(), dx.view(), false);
  CHECK(dx.v == std::vector<double>{1, 2, 1, 2, 4, 2, 1, 2, 1});
}

TEST_CASE("conv2d: forward matches the definition") {
  Rng rng(1);
  for (const ConvCase& c : conv_cases) {
    const ConvData d = conv_data(c, rng);
    TensorD y(out_shape(c), std::nan(""));
    conv2d<double>(attrs(c), d.x.cview(), d.w.cview(), d.b.v.data(), y.view());
    INFO(name(c));
    CHECK(max_rel_err(y, naive_conv(c, d.x, d.w, &d.b)) < 1e-14);
    conv2d<double>(attrs(c), d.x.cview(), d.w.cview(), nullptr, y.view());
    CHECK(max_rel_err(y, naive_conv(c, d.x, d.w, nullptr)) < 1e-14);
  }
}

TEST_CASE("conv2d: gradients match finite differences") {
  Rng rng(2);
  for (const ConvCase& c : conv_cases) {
    ConvData d = conv_data(c, rng);
    const Attrs a = attrs(c);
    // f = sum(dy * conv(x, w, b)), a random linear functional of the output.
    auto f = [&] {
      TensorD y(out_shape(c));
      conv2d<double>(a, d.x.cview(), d.w.cview(), d.b.v.data(), y.view());
      return dot(d.dy, y);
    };
    TensorD dx(d.x.shape), dw(d.w.shape), db({c.O});
    conv2d_backward_data<double>(a, d.dy.cview(), d.w.cview(), dx.view(), false);
    conv2d_backward_weight<double>(a, d.x.cview(), d.dy.cview(), dw.view(), false);
    bias_backward<double>(d.dy.cview(), db.v.data(), false);
    check_grad(name(c) + " dx", d.x.v, dx.v, f);
    check_grad(name(c) + " dw", d.w.v, dw.v, f);
    check_grad(name(c) + " db", d.b.v, db.v, f);
  }
}

TEST_CASE("conv2d: backward accumulates") {
  Rng rng(3);
  for (const ConvCase& c : {conv_cases[2], conv_cases[5], conv_cases[9]}) {
    const ConvData d = conv_data(c, rng);
    const Attrs a = attrs(c);
    check_accumulate(
        name(c) + " dx", d.x.shape,
        [&](View<double> dx, bool acc) {
          conv2d_backward_data<double>(a, d.dy.cview(), d.w.cview(), dx, acc);
        },
        rng);
    check_accumulate(
        name(c) + " dw", d.w.shape,
        [&](View<double> dw, bool acc) {
          conv2d_backward_weight<double>(a, d.x.cview(), d.dy.cview(), dw, acc);
        },
        rng);
    check_accumulate(
        name(c) + " db", {c.O},
        [&](View<double> db, bool acc) { bias_backward<double>(d.dy.cview(), db.data, acc); }, rng);
  }
}

TEST_CASE("conv2d: mismatched shapes throw") {
  const ConvCase c = conv_cases[1];
  Rng rng(4);
  const ConvData d = conv_data(c, rng);
  Shape wrong = out_shape(c);
  wrong[3] += 1;
  TensorD y(wrong);
  CHECK_THROWS_AS(conv2d<double>(attrs(c), d.x.cview(), d.w.cview(), nullptr, y.view()),
                  kiln::Error);
  Attrs a = attrs(c);
  a.groups = 2; // 3 input channels do not split in 2 groups
  TensorD y2(out_shape(c));
  CHECK_THROWS_AS(conv2d<double>(a, d.x.cview(), d.w.cview(), nullptr, y2.view()), kiln::Error);
}

} // namespace kiln::cpu::test
