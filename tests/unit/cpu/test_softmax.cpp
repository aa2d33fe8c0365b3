// softmax and softmax cross-entropy over axis 1: values, stability with large logits,
// finite-difference gradients on 2-D and 4-D, target validation, accumulate.
#include "tests/unit/cpu/cpu_test_util.hpp"

#include "runtime/error.hpp"

namespace kiln::cpu::test {

TEST_CASE("softmax: values over axis 1, stable for large logits") {
  // [N=1, K=2, 2 positions]: position 0 has logits {0, ln 3}, position 1 {1000, 1000}.
  const TensorD x({1, 2, 2}, {0, 1000, std::log(3.0), 1000});
  TensorD y({1, 2, 2});
  softmax<double>(x.cview(), y.view());
  CHECK(y[0] == doctest::Approx(0.25).epsilon(1e-15));
  CHECK(y[2] == doctest::Approx(0.75).epsilon(1e-15));
  CHECK(y[1] == 0.5);
  CHECK(y[3] == 0.5);
}

TEST_CASE("softmax: gradients match finite differences (2-D and 4-D)") {
  Rng rng(51);
  for (const Shape& s : {Shape{3, 5}, Shape{2, 4, 3, 2}, Shape{1, 3, 1, 5}, Shape{2, 1}}) {
    TensorD x = random_tensor(s, rng, -3, 3);
    const TensorD dy = random_tensor(s, rng);
    TensorD y(s), dx(s);
    softmax<double>(x.cview(), y.view());
    softmax_backward<double>(y.cview(), dy.cview(), dx.view(), false);
    auto f = [&] {
      TensorD out(s);
      softmax<double>(x.cview(), out.view());
      return dot(dy, out);
    };
    if (s[1] == 1) { // a single class: constant output, zero gradient
      for (double v : dx.v)
        CHECK(v == 0);
      continue;
    }
    check_grad("softmax " + shape_str(s), x.v, dx.v, f);
    check_accumulate(
        "softmax " + shape_str(s), s,
        [&](View<double> d, bool acc) { softmax_backward<double>(y.cview(), dy.cview(), d, acc); },
        rng);
  }
}

TEST_CASE("softmax_cross_entropy: value, gradient, 2-D and 4-D") {
  const TensorD x({1, 2}, {0, std::log(3.0)});
  TensorD p({1, 2});
  const int64_t t1[] = {1};
  CHECK(softmax_cross_entropy<double>(x.cview(), t1, p.view()) ==
        doctest::Approx(-std::log(0.75)).epsilon(1e-15));
  CHECK(p[1] == doctest::Approx(0.75).epsilon(1e-15));
  TensorD dl({1, 2});
  softmax_cross_entropy_backward<double>(p.cview(), t1, dl.view(), false);
  CHECK(dl[0] == doctest::Approx(0.25).epsilon(1e-15));
  CHECK(dl[1] == doctest::Approx(-0.25).epsilon(1e-15));

  Rng rng(52);
  // [N, K] and segmentation-style [N, K, H, W] with targets [N, H, W].
  for (const Shape& s : {Shape{4, 5}, Shape{2, 3, 2, 3}, Shape{1, 4, 3, 1}}) {
    const int64_t K = s[1], positions = numel(s) / K;
    std::vector<int64_t> targets(static_cast<size_t>(positions));
    for (int64_t& t : targets)
      t = int64_t(rng() % uint64_t(K));
    TensorD logits = random_tensor(s, rng, -3, 3), probs(s), grad(s);
    softmax_cross_entropy<double>(logits.cview(), targets, probs.view());
    softmax_cross_entropy_backward<double>(probs.cview(), targets, grad.view(), false);
    check_grad("cross-entropy " + shape_str(s), logits.v, grad.v, [&] {
      TensorD pr(s);
      return softmax_cross_entropy<double>(logits.cview(), targets, pr.view());
    });
    // The probabilities it writes are the softmax.
    TensorD sm(s);
    softmax<double>(logits.cview(), sm.view());
    CHECK(max_rel_err(probs, sm) == 0);
    check_accumulate(
        "cross-entropy " + shape_str(s), s,
        [&](View<double> d, bool acc) {
          softmax_cross_entropy_backward<double>(probs.cview(), targets, d, acc);
        },
        rng);
  }
}

TEST_CASE("softmax_cross_entropy: bad targets throw kiln::Error naming the index") {
  const TensorD x({2, 3}, 0.0);
  TensorD p({2, 3});
  const int64_t high[] = {0, 3}, negative[] = {-1, 0}, short_list[] = {0};
  try {
    softmax_cross_entropy<double>(x.cview(), high, p.view());
    FAIL("no error");
  } catch (const kiln::Error& e) {
    CHECK(std::string(e.what()).find("target 1 is 3") != std::string::npos);
  }
  CHECK_THROWS_AS(softmax_cross_entropy<double>(x.cview(), negative, p.view()), kiln::Error);
  CHECK_THROWS_AS(softmax_cross_entropy<double>(x.cview(), short_list, p.view()), kiln::Error);
  CHECK_THROWS_AS(softmax_cross_entropy_backward<double>(p.cview(), high, p.view(), false),
                  kiln::Error);
}

} // namespace kiln::cpu::test
