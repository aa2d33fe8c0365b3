// relu, hardswish, mul, add, copy, sgd_update and concat: values, finite-difference
// gradients and accumulate semantics.
#include "tests/unit/cpu/cpu_test_util.hpp"

#include "runtime/error.hpp"

#include <array>

namespace kiln::cpu::test {

TEST_CASE("relu: values, NaN passes, gradient masks where y <= 0") {
  const double nan = std::nan("");
  const TensorD x({1, 5}, {-1, 0, 2, nan, -0.5});
  TensorD y({1, 5});
  relu<double>(x.cview(), y.view());
  CHECK(y[0] == 0);
  CHECK(y[1] == 0);
  CHECK(y[2] == 2);
  CHECK(std::isnan(y[3]));
  CHECK(y[4] == 0);

  Rng rng(41);
  const Shape s{2, 3, 4, 5};
  TensorD xs = distinct_tensor(s, rng); // no element within a step of the kink
  const TensorD dy = random_tensor(s, rng);
  TensorD ys(s), dx(s);
  relu<double>(xs.cview(), ys.view());
  relu_backward<double>(ys.cview(), dy.cview(), dx.view(), false);
  check_grad("relu", xs.v, dx.v, [&] {
    TensorD out(s);
    relu<double>(xs.cview(), out.view());
    return dot(dy, out);
  });
  check_accumulate(
      "relu", s,
      [&](View<double> d, bool acc) { relu_backward<double>(ys.cview(), dy.cview(), d, acc); },
      rng);
}

TEST_CASE("hardswish: values, PyTorch's gradient at the kinks, finite differences elsewhere") {
  const TensorD x({1, 7}, {-4, -3, -1.5, 0, 1, 3, 4});
  TensorD y({1, 7});
  activation<double>(Activation::hardswish, x.cview(), y.view());
  const double want[] = {0, 0, -0.375, 0, 1.0 * 4 / 6, 3, 4};
  for (int i = 0; i < 7; ++i)
    CHECK(y[i] == doctest::Approx(want[i]).epsilon(1e-15));
  const TensorD ones({1, 7}, {1, 1, 1, 1, 1, 1, 1});
  TensorD g({1, 7});
  activation_backward<double>(Activation::hardswish, x.cview(), ones.cview(), g.view(), false);
  // torch.ops.aten.hardswish_backward: 0 below -3, x / 3 + 1/2 up to 3 inclusive, then 1.
  const double dwant[] = {0, -0.5, 0, 0.5, 1.0 / 3 + 0.5, 1.5, 1};
  for (int i = 0; i < 7; ++i)
    CHECK(g[i] == doctest::Approx(dwant[i]).epsilon(1e-15));

  Rng rng(43);
  const Shape s{2, 3, 4, 5};
  TensorD xs = random_tensor(s, rng, -5, 5);
  for (double& v : xs.v) // away from the kinks at -3 and 3, where the derivative jumps
    if (std::abs(std::abs(v) - 3) < 0.05) v += 0.1;
  const TensorD dy = random_tensor(s, rng);
  TensorD dx(s);
  activation_backward<double>(Activation::hardswish, xs.cview(), dy.cview(), dx.view(), false);
  check_grad("hardswish", xs.v, dx.v, [&] {
    TensorD out(s);
    activation<double>(Activation::hardswish, xs.cview(), out.view());
    return dot(dy, out);
  });
  check_accumulate(
      "hardswish", s,
      [&](View<double> d, bool acc) {
        activation_backward<double>(Activation::hardswish, xs.cview(), dy.cview(), d, acc);
      },
      rng);
}

TEST_CASE("mul: same shape and [N, C, 1, 1] broadcast; both inputs' gradients") {
  const TensorD a({1, 2, 1, 2}, {1, 2, 3, 4}), g({1, 2, 1, 1}, {10, -1});
  TensorD y({1, 2, 1, 2});
  mul<double>(a.cview(), g.cview(), y.view());
  const double want[] = {10, 20, -3, -4};
  for (int i = 0; i < 4; ++i)
    CHECK(y[i] == want[i]);

  Rng rng(53);
  for (const Shape& gs : {Shape{2, 3, 4, 5}, Shape{2, 3, 1, 1}}) {
    const Shape s{2, 3, 4, 5};
    TensorD x0 = random_tensor(s, rng), x1 = random_tensor(gs, rng);
    const TensorD dy = random_tensor(s, rng);
    TensorD d0(s), d1(gs);
    mul_backward<double>(x1.cview(), dy.cview(), d0.view(), false);
    mul_backward<double>(x0.cview(), dy.cview(), d1.view(), false);
    const auto loss = [&] {
      TensorD out(s);
      mul<double>(x0.cview(), x1.cview(), out.view());
      return dot(dy, out);
    };
    check_grad("mul dx0", x0.v, d0.v, loss);
    check_grad("mul dx1 " + shape_str(gs), x1.v, d1.v, loss);
    check_accumulate(
        "mul dx1", gs,
        [&](View<double> d, bool acc) { mul_backward<double>(x0.cview(), dy.cview(), d, acc); },
        rng);
  }
  TensorD bad({1, 2, 1, 2});
  CHECK_THROWS_AS(mul<double>(a.cview(), TensorD({1, 1, 1, 2}).cview(), bad.view()), Error);
}

TEST_CASE("add, copy and sgd_update") {
  const TensorD a({2, 2}, {1, 2, 3, 4}), b({2, 2}, {10, 20, 30, 40}), c({2, 2}, {0.5, 0, 0, 0});
  const CView<double> xs[] = {a.cview(), b.cview(), c.cview()};
  TensorD y({2, 2});
  add<double>(xs, y.view());
  CHECK(y.v == std::vector<double>{11.5, 22, 33, 44});

  TensorD d({4}, {1, 1, 1, 1});
  copy<double>(a.cview(), d.view(), false);
  CHECK(d.v == a.v);
  copy<double>(b.cview(), d.view(), true);
  CHECK(d.v == std::vector<double>{11, 22, 33, 44});
  TensorD wrong({5});
  CHECK_THROWS_AS(copy<double>(a.cview(), wrong.view(), false), kiln::Error);

  TensorD p({2, 2}, {1, 1, 1, 1});
  sgd_update<double>(p.view(), a.cview(), 0.25);
  CHECK(p.v == std::vector<double>{0.75, 0.5, 0.25, 0});

  // Float: one rounding of the double result.
  Tensor<float> pf({1}, std::vector<float>{1.0f});
  const Tensor<float> gf({1}, std::vector<float>{3.0f});
  sgd_update<float>(pf.view(), gf.cview(), 0.1);
  CHECK(pf[0] == float(1.0 - 0.1 * 3.0));
}

TEST_CASE("concat: values, backward slices at offsets") {
  Rng rng(42);
  const Shape shapes[] = {{2, 1, 3, 2}, {2, 3, 3, 2}, {2, 2, 3, 2}};
  std::vector<TensorD> xs;
  for (const Shape& s : shapes)
    xs.push_back(random_tensor(s, rng));
  const Shape ys{2, 6, 3, 2};
  TensorD y(ys, std::nan(""));
  std::vector<CView<double>> views;
  for (const TensorD& x : xs)
    views.push_back(x.cview());
  concat<double>(views, y.view());
  // y[n, c] is input i's channel c - offset_i.
  const int64_t offsets[] = {0, 1, 4};
  for (int64_t n = 0; n < 2; ++n)
    for (size_t i = 0; i < 3; ++i)
      for (int64_t c = 0; c < shapes[i][1]; ++c)
        for (int64_t j = 0; j < 6; ++j)
          CHECK(y[((n * 6 + offsets[i] + c) * 6) + j] == xs[i][(n * shapes[i][1] + c) * 6 + j]);

  const TensorD dy = random_tensor(ys, rng);
  for (size_t i = 0; i < 3; ++i) {
    TensorD dx(shapes[i]);
    concat_backward<double>(dy.cview(), offsets[i], dx.view(), false);
    check_grad(cat("concat input ", i), xs[i].v, dx.v, [&] {
      TensorD out(ys);
      concat<double>(views, out.view());
      return dot(dy, out);
    });
    check_accumulate(
        cat("concat input ", i), shapes[i],
        [&](View<double> d, bool acc) { concat_backward<double>(dy.cview(), offsets[i], d, acc); },
        rng);
  }
  TensorD too_wide({2, 3, 3, 2});
  CHECK_THROWS_AS(concat_backward<double>(dy.cview(), 4, too_wide.view(), false), kiln::Error);

  // 2-D inputs (features) concatenate too.
  const TensorD f1({2, 2}, {1, 2, 3, 4}), f2({2, 1}, {5, 6});
  const CView<double> fv[] = {f1.cview(), f2.cview()};
  TensorD fy({2, 3});
  concat<double>(fv, fy.view());
  CHECK(fy.v == std::vector<double>{1, 2, 5, 3, 4, 6});
}

} // namespace kiln::cpu::test
