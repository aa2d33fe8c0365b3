// layernorm: hand-computed values (each position over its channels), finite-difference
// gradients of x, weight and bias (4-D and 2-D) through the two backward functions, the
// statistics the backward leaves for the parameter step, accumulate.
#include "tests/unit/cpu/cpu_test_util.hpp"

namespace kiln::cpu::test {

namespace {

const Shape ln_shapes[] = {{2, 3, 4, 5}, {3, 5, 2, 1}, {1, 7, 1, 3}, {6, 4}, {2, 9}};

struct Grads {
  TensorD dx, dw, db, mean, invstd;
};

Grads backward(double eps, const TensorD& x, const TensorD& dy, const TensorD& w) {
  const int64_t C = x.shape[1];
  Shape st = x.shape;
  st[1] = 1;
  Grads g{TensorD(x.shape), TensorD({C}), TensorD({C}), TensorD(st), TensorD(st)};
  layernorm_backward<double>(eps, x.cview(), dy.cview(), w.v.data(), g.dx.view(), g.mean.v.data(),
                             g.invstd.v.data(), false);
  layernorm_backward_params<double>(x.cview(), dy.cview(), g.mean.v.data(), g.invstd.v.data(),
                                    g.dw.v.data(), g.db.v.data(), false);
  return g;
}

} // namespace

TEST_CASE("layernorm: hand-computed values over the channels of each position") {
  // [1, 2, 1, 2]: position 0 holds channels {1, 3} (mean 2, biased variance 1), position 1
  // holds {5, 5} (variance 0).
  const TensorD x({1, 2, 1, 2}, {1, 5, 3, 5});
  const TensorD w({2}, {2, 1}), b({2}, {0.5, -1});
  TensorD y({1, 2, 1, 2});
  layernorm<double>(1e-5, x.cview(), w.v.data(), b.v.data(), y.view());
  const double is0 = 1 / std::sqrt(1 + 1e-5);
  CHECK(y[0] == doctest::Approx(0.5 - 2 * is0).epsilon(1e-15)); // channel 0, position 0
  CHECK(y[2] == doctest::Approx(-1 + is0).epsilon(1e-15));      // channel 1, position 0
  CHECK(y[1] == 0.5);                                           // position 1: x - mean = 0
  CHECK(y[3] == -1);
  // The backward's statistics are the forward's.
  const TensorD dy({1, 2, 1, 2}, {1, 1, 1, 1});
  const Grads g = backward(1e-5, x, dy, w);
  CHECK(g.mean.v == std::vector<double>{2, 5});
  CHECK(g.invstd[0] == doctest::Approx(is0).epsilon(1e-15));
  CHECK(g.invstd[1] == doctest::Approx(1 / std::sqrt(1e-5)).epsilon(1e-15));
  CHECK(g.db.v == std::vector<double>{2, 2}); // dbias: dy summed over positions
}

TEST_CASE("layernorm: gradients of x, weight and bias match finite differences") {
  Rng rng(41);
  for (double eps : {1e-5, 1e-3})
    for (const Shape& s : ln_shapes) {
      const int64_t C = s[1];
      TensorD x = random_tensor(s, rng, -2, 2);
      TensorD w = random_tensor({C}, rng, 0.5, 1.5), b = random_tensor({C}, rng);
      const TensorD dy = random_tensor(s, rng);
      auto f = [&] {
        TensorD y(s);
        layernorm<double>(eps, x.cview(), w.v.data(), b.v.data(), y.view());
        return dot(dy, y);
      };
      const Grads g = backward(eps, x, dy, w);
      const std::string what = "layernorm " + shape_str(s);
      check_grad(what + " dx", x.v, g.dx.v, f);
      check_grad(what + " dweight", w.v, g.dw.v, f);
      check_grad(what + " dbias", b.v, g.db.v, f);
    }
}

TEST_CASE("layernorm: backward and parameter gradients accumulate") {
  Rng rng(42);
  const Shape s{2, 3, 3, 2};
  const TensorD x = random_tensor(s, rng), dy = random_tensor(s, rng);
  const TensorD w = random_tensor({3}, rng, 0.5, 1.5);
  const Grads g = backward(1e-5, x, dy, w);
  check_accumulate(
      "layernorm dx", s,
      [&](View<double> d, bool acc) {
        layernorm_backward<double>(1e-5, x.cview(), dy.cview(), w.v.data(), d, nullptr, nullptr,
                                   acc);
      },
      rng);
  TensorD other({3});
  check_accumulate(
      "layernorm dweight", {3},
      [&](View<double> d, bool acc) {
        layernorm_backward_params<double>(x.cview(), dy.cview(), g.mean.v.data(), g.invstd.v.data(),
                                          d.data, other.v.data(), acc);
      },
      rng);
  check_accumulate(
      "layernorm dbias", {3},
      [&](View<double> d, bool acc) {
        layernorm_backward_params<double>(x.cview(), dy.cview(), g.mean.v.data(), g.invstd.v.data(),
                                          other.v.data(), d.data, acc);
      },
      rng);
}

} // namespace kiln::cpu::test

namespace kiln::cpu::test {

TEST_CASE(
    "layernorm_invstd: the statistic layernorm computes, its gradient by finite differences") {
  // Position 0 holds {1, 3} (biased variance 1), position 1 holds {5, 5} (variance 0).
  const TensorD x({1, 2, 1, 2}, {1, 5, 3, 5});
  TensorD y({1, 1, 1, 2});
  layernorm_invstd<double>(1e-5, x.cview(), y.view());
  CHECK(y[0] == doctest::Approx(1 / std::sqrt(1 + 1e-5)).epsilon(1e-15));
  CHECK(y[1] == doctest::Approx(1 / std::sqrt(1e-5)).epsilon(1e-15));
  Rng rng(43);
  for (double eps : {1e-5, 1e-2})
    for (const Shape& s : ln_shapes) {
      Shape st = s;
      st[1] = 1;
      TensorD xr = random_tensor(s, rng, -2, 2);
      const TensorD dy = random_tensor(st, rng);
      // The same as layernorm's backward leaves for its parameter step.
      TensorD inv(st), inv_bw(st), mean(st), unused(s);
      const TensorD ones({s[1]}, 1.0), zeros(s);
      layernorm_invstd<double>(eps, xr.cview(), inv.view());
      layernorm_backward<double>(eps, xr.cview(), zeros.cview(), ones.v.data(), unused.view(),
                                 mean.v.data(), inv_bw.v.data(), false);
      CHECK(inv.v == inv_bw.v);
      auto f = [&] {
        TensorD o(st);
        layernorm_invstd<double>(eps, xr.cview(), o.view());
        return dot(dy, o);
      };
      TensorD dx(s);
      layernorm_invstd_backward<double>(eps, xr.cview(), dy.cview(), dx.view(), false);
      check_grad("layernorm_invstd " + shape_str(s) + " dx", xr.v, dx.v, f);
      check_accumulate(
          "layernorm_invstd dx " + shape_str(s), s,
          [&](View<double> d, bool acc) {
            layernorm_invstd_backward<double>(eps, xr.cview(), dy.cview(), d, acc);
          },
          rng);
    }
}

} // namespace kiln::cpu::test
