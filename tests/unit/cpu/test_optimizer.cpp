// The optimizer updates (SGD with weight decay and momentum, Adam with bias correction)
// against torch.optim's formulas written out here, and the MSE loss of distillation: value,
// finite-difference gradient, accumulate semantics, float against double.
#include "tests/unit/cpu/cpu_test_util.hpp"

namespace kiln::cpu::test {

TEST_CASE("sgd_update: weight decay and momentum as torch.optim.SGD over three steps") {
  Rng rng(71);
  const Shape s{4, 3};
  TensorD p = random_tensor(s, rng), vel(s), ref = p, ref_vel(s);
  const Sgd h{0.1, 0.01, 0.9};
  bool first = true;
  for (int step = 0; step < 3; ++step) {
    const TensorD g = random_tensor(s, rng);
    sgd_update<double>(p.view(), g.cview(), vel.v.data(), h);
    for (size_t i = 0; i < ref.size(); ++i) {
      const double d = g[i] + h.weight_decay * ref[i];      // d_p = grad + wd * p
      ref_vel[i] = first ? d : h.momentum * ref_vel[i] + d; // buf = d_p on the first step
      ref[i] -= h.lr * ref_vel[i];
    }
    first = false;
  }
  CHECK(max_rel_err(p, ref) < 1e-15);
  CHECK(max_rel_err(vel, ref_vel) < 1e-15);
  // Without momentum no velocity is needed; plain SGD is the three-argument form.
  TensorD q = random_tensor(s, rng), r = q;
  const TensorD g = random_tensor(s, rng);
  sgd_update<double>(q.view(), g.cview(), nullptr, Sgd{0.5, 0, 0});
  sgd_update<double>(r.view(), g.cview(), 0.5);
  CHECK(max_rel_err(q, r) == 0);
  CHECK_THROWS_AS(sgd_update<double>(q.view(), g.cview(), nullptr, Sgd{0.5, 0, 0.9}), Error);
}

TEST_CASE("adam_update: bias-corrected moments as torch.optim.Adam over four steps") {
  Rng rng(72);
  const Shape s{2, 5};
  TensorD p = random_tensor(s, rng), m(s), v(s), rp = p, rm(s), rv(s);
  const Adam h{0.01, 0.8, 0.95, 1e-6, 0.05};
  for (int64_t t = 1; t <= 4; ++t) {
    const TensorD g = random_tensor(s, rng);
    adam_update<double>(p.view(), g.cview(), m.v.data(), v.v.data(), t, h);
    const double bc1 = 1 - std::pow(h.beta1, double(t)), bc2 = 1 - std::pow(h.beta2, double(t));
    for (size_t i = 0; i < rp.size(); ++i) {
      const double d = g[i] + h.weight_decay * rp[i];
      rm[i] = rm[i] * h.beta1 + d * (1 - h.beta1);
      rv[i] = rv[i] * h.beta2 + d * d * (1 - h.beta2);
      const double denom = std::sqrt(rv[i]) / std::sqrt(bc2) + h.eps;
      rp[i] -= h.lr / bc1 * rm[i] / denom;
    }
  }
  CHECK(max_rel_err(p, rp) < 1e-14);
  CHECK(max_rel_err(m, rm) < 1e-14);
  CHECK(max_rel_err(v, rv) < 1e-14);
  // The first step moves every parameter by about lr (the bias correction's point).
  TensorD q(s, 1.0), qm(s), qv(s);
  const TensorD g = random_tensor(s, rng);
  adam_update<double>(q.view(), g.cview(), qm.v.data(), qv.v.data(), 1, Adam{0.01});
  for (size_t i = 0; i < q.size(); ++i)
    CHECK(std::abs(1.0 - q[i]) == doctest::Approx(0.01).epsilon(1e-4));
  CHECK_THROWS_AS(adam_update<double>(q.view(), g.cview(), qm.v.data(), qv.v.data(), 0, Adam{}),
                  Error);
}

TEST_CASE("mse: value, gradient against finite differences, accumulate, float vs double") {
  const TensorD a({1, 2}, {1, 3}), b({1, 2}, {0, 1});
  CHECK(mse<double>(a.cview(), b.cview()) == 2.5); // (1 + 4) / 2
  Rng rng(73);
  for (const Shape& s : {Shape{3, 5}, Shape{2, 4, 3, 2}}) {
    TensorD x = random_tensor(s, rng, -2, 2);
    const TensorD t = random_tensor(s, rng, -2, 2);
    TensorD dx(s);
    mse_backward<double>(x.cview(), t.cview(), dx.view(), false);
    check_grad("mse " + shape_str(s), x.v, dx.v, [&] { return mse<double>(x.cview(), t.cview()); });
    check_accumulate(
        "mse " + shape_str(s), s,
        [&](View<double> d, bool acc) { mse_backward<double>(x.cview(), t.cview(), d, acc); }, rng);
    const TensorD xr = random_floats(s, rng), tr = random_floats(s, rng);
    const auto xf = convert<float>(xr), tf = convert<float>(tr);
    CHECK(mse<float>(xf.cview(), tf.cview()) ==
          doctest::Approx(mse<double>(xr.cview(), tr.cview())).epsilon(1e-6));
  }
  TensorD x({2, 3}), t({3, 2});
  CHECK_THROWS_AS(mse<double>(x.cview(), t.cview()), Error);
}

} // namespace kiln::cpu::test
