// reduce_sum / reduce_mean / reduce_max: values on a small tensor worked by hand (every
// axis set, keepdims either way: the outputs' order does not change), gradients against
// finite differences, max's gradient to the first of tied maxima, accumulate.
#include "tests/unit/cpu/cpu_test_util.hpp"

namespace kiln::cpu::test {

namespace {

Attrs axes(bool c, bool h, bool w, bool keep = true) {
  Attrs a;
  a.reduce_c = c;
  a.reduce_h = h;
  a.reduce_w = w;
  a.keepdims = keep;
  return a;
}

// The output shape, as the op's shape rule gives it.
Shape out_shape(OpKind op, const Attrs& a, const Shape& x) {
  const Shape in[] = {x};
  return infer_shape(op, a, in);
}

} // namespace

TEST_CASE("reduce: values over C, H, W and their combinations") {
  // x[0, c, h, w] = 100c + 10h + w on [1, 2, 2, 3].
  std::vector<double> v;
  for (int c = 0; c < 2; ++c)
    for (int h = 0; h < 2; ++h)
      for (int w = 0; w < 3; ++w)
        v.push_back(100 * c + 10 * h + w);
  const TensorD x({1, 2, 2, 3}, v);
  auto run = [&](Reduce r, const Attrs& a) {
    const OpKind op = r == Reduce::sum    ? OpKind::reduce_sum
                      : r == Reduce::mean ? OpKind::reduce_mean
                                          : OpKind::reduce_max;
    TensorD y(out_shape(op, a, x.shape));
    reduce<double>(r, a, x.cview(), y.view());
    return y.v;
  };
  using V = std::vector<double>;
  CHECK(run(Reduce::sum, axes(true, false, false)) == V{100, 102, 104, 120, 122, 124});
  CHECK(run(Reduce::max, axes(false, true, true)) == V{12, 112});
  CHECK(run(Reduce::mean, axes(false, false, true, false)) == V{1, 11, 101, 111});
  CHECK(run(Reduce::mean, axes(true, true, true, false)) == V{56});
  CHECK(run(Reduce::max, axes(true, false, true)) == V{102, 112});
  CHECK(run(Reduce::sum, axes(false, true, false)) == V{10, 12, 14, 210, 212, 214});
  // Shapes: keepdims keeps unit axes, without it they go (ONNX's rank).
  CHECK(out_shape(OpKind::reduce_sum, axes(true, false, false), {2, 3, 4, 5}) == Shape{2, 1, 4, 5});
  CHECK(out_shape(OpKind::reduce_sum, axes(true, false, false, false), {2, 3, 4, 5}) ==
        Shape{2, 4, 5});
  CHECK(out_shape(OpKind::reduce_max, axes(false, true, true, false), {2, 3, 4, 5}) == Shape{2, 3});
  CHECK(out_shape(OpKind::reduce_mean, axes(true, true, true, false), {2, 3, 4, 5}) == Shape{2});
  CHECK(out_shape(OpKind::reduce_mean, axes(true, false, false, false), {2, 3}) == Shape{2});
  CHECK_THROWS(out_shape(OpKind::reduce_sum, axes(false, false, false), {2, 3, 4, 5}));
  CHECK_THROWS(out_shape(OpKind::reduce_sum, axes(false, true, false), {2, 3}));
  CHECK_THROWS(out_shape(OpKind::reduce_sum, axes(true, false, false), {2, 3, 4}));
}

TEST_CASE("reduce: gradients match finite differences, and accumulate") {
  Rng rng(77);
  const Attrs sets[] = {axes(true, false, false),      axes(false, true, true, false),
                        axes(true, true, false),       axes(false, false, true),
                        axes(true, true, true, false), axes(true, false, true, false)};
  for (Reduce r : {Reduce::sum, Reduce::mean, Reduce::max})
    for (const Shape& s : {Shape{2, 3, 4, 5}, Shape{3, 7}})
      for (const Attrs& a : sets) {
        if (s.size() == 2 && (a.reduce_h || a.reduce_w)) continue;
        const OpKind op = r == Reduce::sum    ? OpKind::reduce_sum
                          : r == Reduce::mean ? OpKind::reduce_mean
                                              : OpKind::reduce_max;
        const Shape ys = out_shape(op, a, s);
        // Distinct values: a finite-difference step never changes which element is largest.
        TensorD x = distinct_tensor(s, rng);
        const TensorD dy = random_tensor(ys, rng);
        TensorD dx(s);
        reduce_backward<double>(r, a, x.v.data(), dy.cview(), dx.view(), false);
        check_grad(cat(op_name(op), " ", shape_str(s), " -> ", shape_str(ys)), x.v, dx.v, [&] {
          TensorD y(ys);
          reduce<double>(r, a, x.cview(), y.view());
          return dot(dy, y);
        });
        check_accumulate(
            cat(op_name(op), " backward"), s,
            [&](View<double> d, bool acc) {
              reduce_backward<double>(r, a, x.v.data(), dy.cview(), d, acc);
            },
            rng);
      }
}

TEST_CASE("reduce_max: the gradient goes to the first of tied maxima only") {
  const TensorD x({1, 2, 1, 3}, {5, 1, 5, 5, 2, 0});
  const TensorD dy({1, 1, 1, 3}, {1, 2, 3});
  TensorD dx({1, 2, 1, 3});
  reduce_backward<double>(Reduce::max, axes(true, false, false), x.v.data(), dy.cview(), dx.view(),
                          false);
  CHECK(dx.v == std::vector<double>{1, 0, 3, 0, 2, 0}); // channel 0 wins ties
  const TensorD dy2({1, 2, 1, 1}, {1, 2});
  reduce_backward<double>(Reduce::max, axes(false, true, true), x.v.data(), dy2.cview(), dx.view(),
                          false);
  CHECK(dx.v == std::vector<double>{1, 0, 0, 2, 0, 0}); // w = 0 in both channels
}

} // namespace kiln::cpu::test
