// The activations with parameters or curves (clip, hardsigmoid, sigmoid, silu, gelu and its
// tanh form): values against closed forms, PyTorch's gradients at the kinks, finite
// differences elsewhere, accumulate semantics.
#include "tests/unit/cpu/cpu_test_util.hpp"

#include "runtime/error.hpp"

#include <algorithm>
#include <cmath>

namespace kiln::cpu::test {

namespace {

// Elementwise values and gradients of `a` at xs against `value` and `grad`, then finite
// differences on random inputs kept `margin` away from the kinks.
template <class F, class G>
void check_activation(const char* what, Activation a, std::initializer_list<double> xs, F value,
                      G grad, std::initializer_list<double> kinks = {}) {
  INFO(what);
  const int64_t n = int64_t(xs.size());
  const TensorD x({1, n}, std::vector<double>(xs));
  TensorD y({1, n}), g({1, n});
  TensorD ones({1, n}, std::vector<double>(size_t(n), 1.0));
  activation<double>(a, x.cview(), y.view());
  activation_backward<double>(a, x.cview(), ones.cview(), g.view(), false);
  for (int64_t i = 0; i < n; ++i) {
    INFO("x = " << x[i]);
    CHECK(y[i] == doctest::Approx(value(x[i])).epsilon(1e-14));
    CHECK(g[i] == doctest::Approx(grad(x[i])).epsilon(1e-12));
  }
  Rng rng(47);
  const Shape s{2, 3, 4, 5};
  TensorD r = random_tensor(s, rng, -8, 8);
  for (double& v : r.v)
    for (double k : kinks)
      if (std::abs(v - k) < 0.05) v += 0.1;
  const TensorD dy = random_tensor(s, rng);
  TensorD dx(s);
  activation_backward<double>(a, r.cview(), dy.cview(), dx.view(), false);
  check_grad(what, r.v, dx.v, [&] {
    TensorD out(s);
    activation<double>(a, r.cview(), out.view());
    return dot(dy, out);
  });
  check_accumulate(
      what, s,
      [&](View<double> d, bool acc) {
        activation_backward<double>(a, r.cview(), dy.cview(), d, acc);
      },
      rng);
}

double sigmoid(double v) { return 1 / (1 + std::exp(-v)); }

} // namespace

TEST_CASE("clip (ReLU6 and any bounds): clamp values, NaN kept, gradient 1 strictly inside") {
  check_activation(
      "relu6", Activation::clip(0, 6), {-2, 0, 3, 6, 7.5},
      [](double v) { return std::clamp(v, 0.0, 6.0); },
      [](double v) { return v > 0 && v < 6 ? 1.0 : 0.0; }, {0, 6});
  check_activation(
      "clip(-1.5, 0.25)", Activation::clip(-1.5f, 0.25f), {-2, -1.5, 0, 0.25, 1},
      [](double v) { return std::clamp(v, -1.5, 0.25); },
      [](double v) { return v > -1.5 && v < 0.25 ? 1.0 : 0.0; }, {-1.5, 0.25});
  const TensorD x({1, 1}, {std::nan("")});
  TensorD y({1, 1});
  activation<double>(Activation::clip(0, 6), x.cview(), y.view());
  CHECK(std::isnan(y[0]));
}

TEST_CASE("hardsigmoid: ONNX's and PyTorch's alpha, gradient alpha strictly inside") {
  check_activation(
      "hardsigmoid(0.2, 0.5)", Activation::hardsigmoid(0.2f, 0.5f), {-3, -2.5, 0, 1, 2.5, 4},
      [](double v) { return std::clamp(double(0.2f) * v + 0.5, 0.0, 1.0); },
      [](double v) {
        const double u = double(0.2f) * v + 0.5;
        return u > 0 && u < 1 ? double(0.2f) : 0.0;
      },
      {-2.5, 2.5});
  // PyTorch's: relu6(x + 3) / 6, gradient 1/6 on (-3, 3).
  const float sixth = float(1.0 / 6);
  check_activation(
      "hardsigmoid(1/6, 1/2)", Activation::hardsigmoid(sixth, 0.5f), {-4, -1, 2, 4},
      [&](double v) { return std::clamp(sixth * v + 0.5, 0.0, 1.0); },
      [&](double v) { return std::abs(v) < 3 ? double(sixth) : 0.0; }, {-3, 3});
}

TEST_CASE("sigmoid and silu") {
  check_activation("sigmoid", Activation::sigmoid, {-30, -1, 0, 2, 30}, sigmoid,
                   [](double v) { return sigmoid(v) * (1 - sigmoid(v)); });
  check_activation(
      "silu", Activation::silu, {-30, -1, 0, 2, 30}, [](double v) { return v * sigmoid(v); },
      [](double v) { return sigmoid(v) + v * sigmoid(v) * (1 - sigmoid(v)); });
}

TEST_CASE("gelu: the erf form and the tanh approximation") {
  check_activation(
      "gelu", Activation::gelu, {-4, -1, 0, 0.5, 3},
      [](double v) { return v / 2 * (1 + std::erf(v / std::sqrt(2.0))); },
      [](double v) {
        return (1 + std::erf(v / std::sqrt(2.0))) / 2 +
               v * std::exp(-v * v / 2) / std::sqrt(2 * M_PI);
      });
  const auto inner = [](double v) { return std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v); };
  check_activation(
      "gelu_tanh", Activation::gelu_tanh, {-4, -1, 0, 0.5, 3},
      [&](double v) { return v / 2 * (1 + std::tanh(inner(v))); },
      [&](double v) {
        const double t = std::tanh(inner(v));
        return (1 + t) / 2 + v / 2 * (1 - t * t) * std::sqrt(2 / M_PI) * (1 + 3 * 0.044715 * v * v);
      });
  // The two forms differ by less than 1e-3 (PyTorch documents the approximation as close).
  const TensorD x({1, 3}, {-2, 0.7, 2.5});
  TensorD a({1, 3}), b({1, 3});
  activation<double>(Activation::gelu, x.cview(), a.view());
  activation<double>(Activation::gelu_tanh, x.cview(), b.view());
  for (int i = 0; i < 3; ++i)
    CHECK(std::abs(a[i] - b[i]) < 1e-3);
}

} // namespace kiln::cpu::test
