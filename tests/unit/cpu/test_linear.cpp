// linear: hand-computed values, a direct reference, finite-difference gradients (data,
// weight, bias) and accumulate semantics.
#include "tests/unit/cpu/cpu_test_util.hpp"

#include "runtime/error.hpp"

namespace kiln::cpu::test {

TEST_CASE("linear: hand-computed values") {
  const TensorD x({2, 3}, {1, 2, 3, -1, 0, 2});
  const TensorD w({2, 3}, {1, 0, -1, 0.5, 0.5, 0.5});
  const TensorD b({2}, {10, 20});
  TensorD y({2, 2});
  linear<double>(x.cview(), w.cview(), b.v.data(), y.view());
  CHECK(y.v == std::vector<double>{8, 23, 7, 20.5});
  linear<double>(x.cview(), w.cview(), nullptr, y.view());
  CHECK(y.v == std::vector<double>{-2, 3, -3, 0.5});
}

TEST_CASE("linear: forward matches the definition, gradients match finite differences") {
  Rng rng(21);
  // Feature counts around the 8-wide partial sums of the dot product.
  const int64_t shapes[][3] = {{1, 1, 1}, {3, 7, 5}, {2, 8, 3}, {4, 17, 6}, {2, 33, 9}};
  for (const auto& s : shapes) {
    const int64_t N = s[0], F = s[1], K = s[2];
    TensorD x = random_tensor({N, F}, rng), w = random_tensor({K, F}, rng);
    TensorD b = random_tensor({K}, rng);
    const TensorD dy = random_tensor({N, K}, rng);
    const std::string what = cat("linear ", N, "x", F, " -> ", K);
    TensorD y({N, K}, std::nan("")), ref({N, K});
    linear<double>(x.cview(), w.cview(), b.v.data(), y.view());
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) {
        double acc = b[k];
        for (int64_t f = 0; f < F; ++f)
          acc += x[n * F + f] * w[k * F + f];
        ref[n * K + k] = acc;
      }
    INFO(what);
    CHECK(max_rel_err(y, ref) < 1e-14);

    auto f = [&] {
      TensorD out({N, K});
      linear<double>(x.cview(), w.cview(), b.v.data(), out.view());
      return dot(dy, out);
    };
    TensorD dx(x.shape), dw(w.shape), db({K});
    linear_backward_data<double>(dy.cview(), w.cview(), dx.view(), false);
    linear_backward_weight<double>(x.cview(), dy.cview(), dw.view(), false);
    bias_backward<double>(dy.cview(), db.v.data(), false);
    check_grad(what + " dx", x.v, dx.v, f);
    check_grad(what + " dw", w.v, dw.v, f);
    check_grad(what + " db", b.v, db.v, f);
  }
}

TEST_CASE("linear: backward accumulates; mismatched shapes throw") {
  Rng rng(22);
  const TensorD x = random_tensor({3, 10}, rng), w = random_tensor({4, 10}, rng);
  const TensorD dy = random_tensor({3, 4}, rng);
  check_accumulate(
      "linear dx", x.shape,
      [&](View<double> dx, bool acc) {
        linear_backward_data<double>(dy.cview(), w.cview(), dx, acc);
      },
      rng);
  check_accumulate(
      "linear dw", w.shape,
      [&](View<double> dw, bool acc) {
        linear_backward_weight<double>(x.cview(), dy.cview(), dw, acc);
      },
      rng);
  check_accumulate(
      "linear db", {4},
      [&](View<double> db, bool acc) { bias_backward<double>(dy.cview(), db.data, acc); }, rng);
  TensorD y({3, 5});
  CHECK_THROWS_AS(linear<double>(x.cview(), w.cview(), nullptr, y.view()), kiln::Error);
}

} // namespace kiln::cpu::test
