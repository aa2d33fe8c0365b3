// Pooling: hand-computed PyTorch cases (first-max ties, padding, avgpool divisors at a
// ceil_mode border, uneven adaptive windows), a brute-force reference by window membership,
// finite-difference gradients and accumulate semantics.
#include "tests/unit/cpu/cpu_test_util.hpp"

namespace kiln::cpu::test {

namespace {

struct PoolCase {
  int64_t N, C, H, W;
  Int2 kernel, stride, padding;
  bool ceil_mode;
};

const PoolCase pool_cases[] = {
    {2, 2, 6, 6, {2, 2}, {2, 2}, {0, 0}, false},
    {1, 2, 7, 7, {3, 3}, {2, 2}, {1, 1}, false}, // resnet's stem pool
    {1, 2, 7, 7, {3, 3}, {2, 2}, {1, 1}, true},
    {1, 3, 8, 5, {2, 3}, {2, 2}, {1, 1}, true},
    {2, 1, 9, 10, {3, 2}, {3, 1}, {0, 1}, true},
    {1, 2, 5, 5, {2, 2}, {2, 2}, {0, 0}, true}, // last window hangs over the edge
    {1, 1, 10, 9, {4, 4}, {3, 3}, {2, 2}, true},
    {1, 2, 4, 4, {3, 3}, {2, 2}, {1, 1}, true},
    {1, 1, 6, 7, {3, 1}, {1, 3}, {1, 0}, false}, // overlapping windows
    {1, 2, 11, 8, {5, 3}, {3, 2}, {2, 1}, false},
};

Attrs attrs(const PoolCase& c, bool count_include_pad = true) {
  Attrs a;
  a.kernel = c.kernel, a.stride = c.stride, a.padding = c.padding, a.ceil_mode = c.ceil_mode;
  a.count_include_pad = count_include_pad;
  return a;
}

Shape out_shape(const PoolCase& c) {
  return {c.N, c.C, window_out(c.H, c.kernel[0], c.stride[0], c.padding[0], 1, c.ceil_mode),
          window_out(c.W, c.kernel[1], c.stride[1], c.padding[1], 1, c.ceil_mode)};
}

std::string name(const PoolCase& c) {
  return cat("pool ", c.H, "x", c.W, " k", c.kernel[0], "x", c.kernel[1], " s", c.stride[0], "x",
             c.stride[1], " p", c.padding[0], "x", c.padding[1], c.ceil_mode ? " ceil" : "");
}

bool in_window(int64_t i, int64_t o, int64_t k, int64_t s, int64_t p) {
  return o * s - p <= i && i < o * s - p + k;
}

// By membership: every input position tested against every window. The count_include_pad
// divisor counts window positions inside the padded input [-p, in + p).
TensorD brute_pool(const PoolCase& c, const TensorD& x, bool max, bool count_include_pad) {
  TensorD y(out_shape(c));
  const int64_t OH = y.shape[2], OW = y.shape[3];
  for (int64_t nc = 0; nc < c.N * c.C; ++nc)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        double best = -INFINITY, sum = 0, count = 0, padded_h = 0, padded_w = 0;
        for (int64_t i = -c.padding[0]; i < c.H + c.padding[0]; ++i)
          padded_h += in_window(i, oh, c.kernel[0], c.stride[0], c.padding[0]);
        for (int64_t i = -c.padding[1]; i < c.W + c.padding[1]; ++i)
          padded_w += in_window(i, ow, c.kernel[1], c.stride[1], c.padding[1]);
        for (int64_t ih = 0; ih < c.H; ++ih)
          for (int64_t iw = 0; iw < c.W; ++iw)
            if (in_window(ih, oh, c.kernel[0], c.stride[0], c.padding[0]) &&
                in_window(iw, ow, c.kernel[1], c.stride[1], c.padding[1])) {
              const double v = x[(nc * c.H + ih) * c.W + iw];
              best = std::max(best, v), sum += v, count += 1;
            }
        y[(nc * OH + oh) * OW + ow] =
            max ? best : sum / (count_include_pad ? padded_h * padded_w : count);
      }
  return y;
}

} // namespace

TEST_CASE("maxpool2d: values and the first-maximum tie rule") {
  const TensorD x({1, 1, 4, 4}, {1, 3, 2, 1, //
                                 3, 0, 1, 2, //
                                 0, 1, 5, 5, //
                                 2, 0, 5, 4});
  Attrs a;
  a.kernel = {2, 2}, a.stride = {2, 2};
  TensorD y({1, 1, 2, 2});
  maxpool2d<double>(a, x.cview(), y.view());
  CHECK(y.v == std::vector<double>{3, 2, 2, 5});
  const TensorD dy({1, 1, 2, 2}, {1, 2, 3, 4});
  TensorD dx({1, 1, 4, 4}, std::nan(""));
  maxpool2d_backward<double>(a, x.cview(), dy.cview(), dx.view(), false);
  // Ties go to the first in row-major order: (0,1) not (1,0); (0,2) not (1,3); (2,2).
  CHECK(dx.v == std::vector<double>{0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 4, 0, 3, 0, 0, 0});

  // Overlapping 3x3 windows at stride 1: the first 5, at (2,2), wins all four windows (the
  // 5s at (2,3) and (3,2) tie) and collects every window's dy.
  a.kernel = {3, 3}, a.stride = {1, 1};
  maxpool2d_backward<double>(a, x.cview(), dy.cview(), dx.view(), false);
  CHECK(dx.v == std::vector<double>{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0});
}

TEST_CASE("maxpool2d: padding never wins (implicit -inf)") {
  const TensorD x({1, 1, 3, 3}, {-5, -4, -3, -2, -1, -6, -7, -8, -9});
  Attrs a;
  a.kernel = {3, 3}, a.stride = {2, 2}, a.padding = {1, 1};
  TensorD y({1, 1, 2, 2});
  maxpool2d<double>(a, x.cview(), y.view());
  CHECK(y.v == std::vector<double>{-1, -1, -1, -1});
  a.kernel = {2, 2}, a.padding = {1, 1}, a.ceil_mode = true; // 3 -> 2 windows each way
  maxpool2d<double>(a, x.cview(), y.view());
  CHECK(y.v == std::vector<double>{-5, -3, -2, -1});
}

TEST_CASE("avgpool2d: divisors at a ceil_mode border") {
  // 4x4 input 1..16, kernel 3, stride 2, padding 1, ceil_mode: 3x3 windows, the last ones
  // start at 3 and reach the padded edge 5 (2 rows counted, 1 of them real).
  TensorD x({1, 1, 4, 4});
  for (size_t i = 0; i < 16; ++i)
    x[i] = double(i + 1);
  Attrs a;
  a.kernel = {3, 3}, a.stride = {2, 2}, a.padding = {1, 1}, a.ceil_mode = true;
  TensorD y({1, 1, 3, 3});
  a.count_include_pad = true;
  avgpool2d<double>(a, x.cview(), y.view());
  CHECK(y[0] == doctest::Approx(14.0 / 9).epsilon(1e-15)); // (1+2+5+6) / 9
  CHECK(y[2] == doctest::Approx(12.0 / 6).epsilon(1e-15)); // (4+8) / (3 rows x 2 cols)
  CHECK(y[4] == doctest::Approx(99.0 / 9).epsilon(1e-15));
  CHECK(y[8] == doctest::Approx(16.0 / 4).epsilon(1e-15)); // 16 / (2 x 2)
  a.count_include_pad = false;
  avgpool2d<double>(a, x.cview(), y.view());
  CHECK(y[0] == doctest::Approx(14.0 / 4).epsilon(1e-15));
  CHECK(y[2] == doctest::Approx(12.0 / 2).epsilon(1e-15));
  CHECK(y[4] == doctest::Approx(99.0 / 9).epsilon(1e-15));
  CHECK(y[8] == doctest::Approx(16.0).epsilon(1e-15));

  // The backward spreads dy over the real elements with the same divisor.
  TensorD dy({1, 1, 3, 3}, 0.0), dx({1, 1, 4, 4});
  dy[8] = 1;
  a.count_include_pad = true;
  avgpool2d_backward<double>(a, dy.cview(), dx.view(), false);
  CHECK(dx[15] == 0.25);
  CHECK(dx[14] == 0);
}

TEST_CASE("adaptive_avgpool2d: uneven windows 7 -> 3 and 10 -> 7") {
  TensorD x({1, 1, 1, 7});
  for (size_t i = 0; i < 7; ++i)
    x[i] = double(i);
  TensorD y({1, 1, 1, 3});
  adaptive_avgpool2d<double>(x.cview(), y.view());
  CHECK(y.v == std::vector<double>{1, 3, 5}); // [0,3) [2,5) [4,7)
  TensorD x2({1, 1, 10, 1});
  for (size_t i = 0; i < 10; ++i)
    x2[i] = double(i);
  TensorD y2({1, 1, 7, 1});
  adaptive_avgpool2d<double>(x2.cview(), y2.view());
  // [0,2) [1,3) [2,5) [4,6) [5,8) [7,9) [8,10)
  CHECK(y2.v == std::vector<double>{0.5, 1.5, 3, 4.5, 6, 7.5, 8.5});
  TensorD dy2({1, 1, 7, 1}, 1.0), dx2({1, 1, 10, 1});
  adaptive_avgpool2d_backward<double>(dy2.cview(), dx2.view(), false);
  CHECK(dx2[2] == doctest::Approx(0.5 + 1.0 / 3).epsilon(1e-15)); // in [1,3) and [2,5)
  CHECK(dx2[9] == 0.5);
}

TEST_CASE("pooling: forward matches a brute-force reference") {
  Rng rng(11);
  for (const PoolCase& c : pool_cases) {
    REQUIRE(numel(out_shape(c)) > 0);
    const TensorD x = random_tensor({c.N, c.C, c.H, c.W}, rng);
    TensorD y(out_shape(c), std::nan(""));
    INFO(name(c));
    maxpool2d<double>(attrs(c), x.cview(), y.view());
    CHECK(max_rel_err(y, brute_pool(c, x, true, false)) == 0);
    for (bool cip : {true, false}) {
      INFO("count_include_pad ", cip);
      avgpool2d<double>(attrs(c, cip), x.cview(), y.view());
      CHECK(max_rel_err(y, brute_pool(c, x, false, cip)) < 1e-15);
    }
  }
}

TEST_CASE("pooling: gradients match finite differences") {
  Rng rng(12);
  for (const PoolCase& c : pool_cases) {
    const TensorD dy = random_tensor(out_shape(c), rng);
    // Max: values 0.01 apart, so no finite-difference step changes a window's winner.
    TensorD x = distinct_tensor({c.N, c.C, c.H, c.W}, rng);
    TensorD dx(x.shape);
    maxpool2d_backward<double>(attrs(c), x.cview(), dy.cview(), dx.view(), false);
    check_grad(name(c) + " maxpool", x.v, dx.v, [&] {
      TensorD y(out_shape(c));
      maxpool2d<double>(attrs(c), x.cview(), y.view());
      return dot(dy, y);
    });
    for (bool cip : {true, false}) {
      const Attrs a = attrs(c, cip);
      avgpool2d_backward<double>(a, dy.cview(), dx.view(), false);
      check_grad(name(c) + (cip ? " avgpool count_include_pad" : " avgpool"), x.v, dx.v, [&] {
        TensorD y(out_shape(c));
        avgpool2d<double>(a, x.cview(), y.view());
        return dot(dy, y);
      });
    }
  }
}

TEST_CASE("adaptive_avgpool2d: gradients match finite differences") {
  Rng rng(13);
  const std::pair<Shape, Shape> cases[] = {
      {{2, 2, 10, 7}, {2, 2, 7, 3}}, // shrinking, uneven
      {{1, 2, 3, 5}, {1, 2, 5, 4}},  // growing: overlapping windows
      {{2, 3, 5, 6}, {2, 3, 1, 1}},  // global average
      {{1, 1, 4, 4}, {1, 1, 4, 4}},  // identity
  };
  for (const auto& [xs, ys] : cases) {
    TensorD x = random_tensor(xs, rng), dx(xs);
    const TensorD dy = random_tensor(ys, rng);
    adaptive_avgpool2d_backward<double>(dy.cview(), dx.view(), false);
    check_grad("adaptive " + shape_str(xs) + " -> " + shape_str(ys), x.v, dx.v, [&] {
      TensorD y(ys);
      adaptive_avgpool2d<double>(x.cview(), y.view());
      return dot(dy, y);
    });
  }
}

TEST_CASE("pooling: backward accumulates") {
  Rng rng(14);
  for (const PoolCase& c : {pool_cases[2], pool_cases[8]}) {
    const TensorD x = distinct_tensor({c.N, c.C, c.H, c.W}, rng);
    const TensorD dy = random_tensor(out_shape(c), rng);
    check_accumulate(
        name(c) + " maxpool", x.shape,
        [&](View<double> dx, bool acc) {
          maxpool2d_backward<double>(attrs(c), x.cview(), dy.cview(), dx, acc);
        },
        rng);
    check_accumulate(
        name(c) + " avgpool", x.shape,
        [&](View<double> dx, bool acc) {
          avgpool2d_backward<double>(attrs(c, false), dy.cview(), dx, acc);
        },
        rng);
  }
  const TensorD dy = random_tensor({2, 2, 3, 4}, rng);
  check_accumulate(
      "adaptive", {2, 2, 7, 9},
      [&](View<double> dx, bool acc) { adaptive_avgpool2d_backward<double>(dy.cview(), dx, acc); },
      rng);
}

} // namespace kiln::cpu::test
