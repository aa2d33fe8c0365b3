// batchnorm: hand-computed statistics, finite-difference gradients of the training mode
// (4-D and 2-D, through the batch statistics) and of the inference mode, accumulate.
#include "tests/unit/cpu/cpu_test_util.hpp"

namespace kiln::cpu::test {

namespace {

struct BnParams {
  TensorD gamma, beta, mean, var;
};

BnParams bn_params(int64_t C, Rng& rng) {
  return {random_tensor({C}, rng, 0.5, 1.5), random_tensor({C}, rng), random_tensor({C}, rng),
          random_tensor({C}, rng, 0.5, 2.0)};
}

const Shape bn_shapes[] = {{2, 3, 4, 5}, {3, 2, 3, 3}, {1, 2, 5, 1}, {6, 4}, {2, 5}};

} // namespace

TEST_CASE("batchnorm: hand-computed training and inference values") {
  // Channel 0 holds {1, 3} (mean 2, biased variance 1), channel 1 holds {4, 4} (variance 0).
  const TensorD x({2, 2}, {1, 4, 3, 4});
  const TensorD gamma({2}, {2, 1}), beta({2}, {0.5, -1});
  Attrs a;
  a.eps = 1e-5;
  TensorD y({2, 2});
  double mean[2], invstd[2];
  batchnorm_train<double>(a, x.cview(), gamma.v.data(), beta.v.data(), y.view(), mean, invstd);
  const double is0 = 1 / std::sqrt(1 + 1e-5), is1 = 1 / std::sqrt(1e-5);
  CHECK(mean[0] == 2);
  CHECK(mean[1] == 4);
  CHECK(invstd[0] == doctest::Approx(is0).epsilon(1e-15));
  CHECK(invstd[1] == doctest::Approx(is1).epsilon(1e-15));
  CHECK(y[0] == doctest::Approx(0.5 - 2 * is0).epsilon(1e-15));
  CHECK(y[2] == doctest::Approx(0.5 + 2 * is0).epsilon(1e-15));
  CHECK(y[1] == -1);

  const TensorD rm({2}, {1, 2}), rv({2}, {4, 0.25});
  a.eps = 0;
  batchnorm_inference<double>(a, x.cview(), gamma.v.data(), beta.v.data(), rm.v.data(), rv.v.data(),
                              y.view());
  CHECK(y.v == std::vector<double>{0.5, 3, 2.5, 3}); // (x - rm) / sqrt(rv) * gamma + beta
}

TEST_CASE("batchnorm: training gradients match finite differences (4-D and 2-D)") {
  Rng rng(31);
  Attrs a;
  a.eps = 1e-3;
  for (const Shape& s : bn_shapes) {
    const int64_t C = s[1];
    TensorD x = random_tensor(s, rng, -2, 2);
    BnParams p = bn_params(C, rng);
    const TensorD dy = random_tensor(s, rng);
    auto f = [&] {
      TensorD y(s), m({C}), is({C});
      batchnorm_train<double>(a, x.cview(), p.gamma.v.data(), p.beta.v.data(), y.view(), m.v.data(),
                              is.v.data());
      return dot(dy, y);
    };
    TensorD y(s), mean({C}), invstd({C});
    batchnorm_train<double>(a, x.cview(), p.gamma.v.data(), p.beta.v.data(), y.view(),
                            mean.v.data(), invstd.v.data());
    TensorD dx(s), dgamma({C}), dbeta({C});
    batchnorm_backward<double>(x.cview(), dy.cview(), p.gamma.v.data(), mean.v.data(),
                               invstd.v.data(), dx.view(), dgamma.v.data(), dbeta.v.data(), false);
    const std::string what = "batchnorm train " + shape_str(s);
    check_grad(what + " dx", x.v, dx.v, f);
    check_grad(what + " dgamma", p.gamma.v, dgamma.v, f);
    check_grad(what + " dbeta", p.beta.v, dbeta.v, f);
  }
}

TEST_CASE("batchnorm: inference gradient matches finite differences") {
  Rng rng(32);
  Attrs a;
  for (const Shape& s : bn_shapes) {
    const int64_t C = s[1];
    TensorD x = random_tensor(s, rng);
    const BnParams p = bn_params(C, rng);
    const TensorD dy = random_tensor(s, rng);
    TensorD dx(s);
    batchnorm_inference_backward<double>(a, dy.cview(), p.gamma.v.data(), p.var.v.data(), dx.view(),
                                         false);
    check_grad("batchnorm inference " + shape_str(s), x.v, dx.v, [&] {
      TensorD y(s);
      batchnorm_inference<double>(a, x.cview(), p.gamma.v.data(), p.beta.v.data(), p.mean.v.data(),
                                  p.var.v.data(), y.view());
      return dot(dy, y);
    });
  }
}

TEST_CASE("batchnorm: backward accumulates") {
  Rng rng(33);
  Attrs a;
  const Shape s{2, 3, 3, 2};
  const TensorD x = random_tensor(s, rng), dy = random_tensor(s, rng);
  const BnParams p = bn_params(3, rng);
  TensorD y(s), mean({3}), invstd({3});
  batchnorm_train<double>(a, x.cview(), p.gamma.v.data(), p.beta.v.data(), y.view(), mean.v.data(),
                          invstd.v.data());
  auto backward = [&](double* dx, double* dgamma, double* dbeta, bool acc) {
    batchnorm_backward<double>(x.cview(), dy.cview(), p.gamma.v.data(), mean.v.data(),
                               invstd.v.data(), {dx, s}, dgamma, dbeta, acc);
  };
  // Each output on its own (the others null), so the three are checked separately.
  check_accumulate(
      "batchnorm dx", s, [&](View<double> d, bool acc) { backward(d.data, nullptr, nullptr, acc); },
      rng);
  TensorD scratch(s);
  check_accumulate(
      "batchnorm dgamma", {3},
      [&](View<double> d, bool acc) { backward(scratch.v.data(), d.data, nullptr, acc); }, rng);
  check_accumulate(
      "batchnorm dbeta", {3},
      [&](View<double> d, bool acc) { backward(scratch.v.data(), nullptr, d.data, acc); }, rng);
  check_accumulate(
      "batchnorm inference dx", s,
      [&](View<double> d, bool acc) {
        batchnorm_inference_backward<double>(a, dy.cview(), p.gamma.v.data(), p.var.v.data(), d,
                                             acc);
      },
      rng);
}

} // namespace kiln::cpu::test
