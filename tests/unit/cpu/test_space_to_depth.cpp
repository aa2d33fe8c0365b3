// space_to_depth: ONNX's worked example, the zero regions that padding, size and out_channels
// add, and the backward as the forward's adjoint, with accumulate.
#include "tests/unit/cpu/cpu_test_util.hpp"

namespace kiln::cpu::test {

namespace {

Attrs s2d(int64_t factor, Int2 padding = {0, 0}, Int2 size = {0, 0}, int64_t out_channels = 0) {
  Attrs a;
  a.factor = factor;
  a.padding = padding;
  a.size = size;
  a.out_channels = out_channels;
  return a;
}

Shape out(const Attrs& a, const Shape& x) {
  return infer_shape(OpKind::space_to_depth, a, std::span<const Shape>(&x, 1));
}

} // namespace

TEST_CASE("space_to_depth: ONNX's example, channels in block row, block column, channel order") {
  // 1x1x4x4 holding 0..15 -> 1x4x2x2: channel bh*2 + bw holds x[2i + bh, 2j + bw].
  TensorD x({1, 1, 4, 4});
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = double(i);
  const Attrs a = s2d(2);
  REQUIRE(out(a, x.shape) == Shape{1, 4, 2, 2});
  TensorD y({1, 4, 2, 2});
  space_to_depth<double>(a, x.cview(), y.view());
  CHECK(y.v == std::vector<double>{0, 2, 8, 10, 1, 3, 9, 11, 4, 6, 12, 14, 5, 7, 13, 15});
  // Two channels: x channel c is innermost in y's channel ((bh*2 + bw)*2 + c).
  TensorD x2({1, 2, 2, 2}, {0, 1, 2, 3, 10, 11, 12, 13});
  TensorD y2({1, 8, 1, 1});
  space_to_depth<double>(a, x2.cview(), y2.view());
  CHECK(y2.v == std::vector<double>{0, 10, 1, 11, 2, 12, 3, 13});
}

TEST_CASE("space_to_depth: padding, size and out_channels add zeros; size drops rows") {
  // 1x1x3x3 of 1..9, S 2, padding [1, 1]: the padded 4x4 has a zero first row and column.
  TensorD x({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Attrs a = s2d(2, {1, 1}, {0, 0}, 6);
  REQUIRE(out(a, x.shape) == Shape{1, 6, 2, 2});
  TensorD y({1, 6, 2, 2}, std::nan(""));
  space_to_depth<double>(a, x.cview(), y.view());
  CHECK(y.v == std::vector<double>{0, 0, 0, 5, // (bh 0, bw 0): padded rows 0, 2; cols 0, 2
                                   0, 0, 4, 6, // (0, 1): cols 1, 3
                                   0, 2, 0, 8, // (1, 0): rows 1, 3
                                   1, 3, 7, 9, // (1, 1)
                                   0, 0, 0, 0, // out_channels past S*S*C
                                   0, 0, 0, 0});
  // Size 3x1: row 2 lies past x (zeros); column block 1 of x is dropped.
  const Attrs b = s2d(2, {0, 0}, {3, 1});
  REQUIRE(out(b, x.shape) == Shape{1, 4, 3, 1});
  TensorD yb({1, 4, 3, 1}, std::nan(""));
  space_to_depth<double>(b, x.cview(), yb.view());
  CHECK(yb.v == std::vector<double>{1, 7, 0, 2, 8, 0, 4, 0, 0, 5, 0, 0});
  // Default size: ceil((H + padding) / S).
  CHECK(out(s2d(3, {2, 0}), {2, 5, 7, 8}) == Shape{2, 45, 3, 3});
  CHECK_THROWS_AS(out(s2d(2, {0, 0}, {0, 0}, 3), x.shape), Error);
  CHECK_THROWS_AS(out(s2d(0), x.shape), Error);
  CHECK_THROWS_AS(out(s2d(2, {-1, 0}), x.shape), Error);
}

TEST_CASE("space_to_depth: the backward is the forward's adjoint, and accumulates") {
  Rng rng(77);
  struct Case {
    Shape x;
    Attrs a;
  };
  const Case cases[] = {
      {{2, 3, 4, 6}, s2d(2)},
      {{2, 3, 14, 14}, s2d(2, {1, 1}, {8, 8}, 16)}, // a stem: more rows than x, zero channels
      {{8, 3, 7, 7}, s2d(2, {0, 0}, {4, 4}, 16)},   // a weight: O filters as the images
      {{1, 2, 9, 7}, s2d(3, {2, 1}, {2, 2}, 0)},    // size drops x's last rows and columns
      {{1, 1, 5, 5}, s2d(1, {1, 0}, {0, 0}, 3)},
  };
  for (const Case& k : cases) {
    const Shape ys = out(k.a, k.x);
    const TensorD x = random_tensor(k.x, rng), dy = random_tensor(ys, rng);
    TensorD y(ys), dx(k.x);
    space_to_depth<double>(k.a, x.cview(), y.view());
    space_to_depth_backward<double>(k.a, dy.cview(), dx.view(), false);
    INFO(shape_str(k.x), " -> ", shape_str(ys));
    const double lhs = dot(dy, y), rhs = dot(dx, x);
    CHECK(std::abs(lhs - rhs) <= 1e-12 * (std::abs(lhs) + 1));
    CHECK(lhs != 0);
    check_accumulate(
        "space_to_depth backward " + shape_str(k.x), k.x,
        [&](View<double> d, bool acc) { space_to_depth_backward<double>(k.a, dy.cview(), d, acc); },
        rng);
  }
}

} // namespace kiln::cpu::test
