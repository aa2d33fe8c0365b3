// resize: values against PyTorch's (F.interpolate) for nearest and bilinear under each
// coordinate rule, non-integer scales and sizes, finite-difference gradients and accumulate
// semantics for every mode.
#include "tests/unit/cpu/cpu_test_util.hpp"

#include "runtime/error.hpp"

namespace kiln::cpu::test {

namespace {

Attrs resize_attrs(ResizeMode m, CoordinateMode c, NearestMode r, Int2 size, Num2 scale = {0, 0}) {
  Attrs a;
  a.mode = int64_t(m);
  a.coordinate_mode = int64_t(c);
  a.nearest_mode = int64_t(r);
  a.size = size;
  a.scale = scale;
  return a;
}

std::vector<double> resized(const Attrs& a, const TensorD& x, const Shape& ys) {
  TensorD y(ys);
  resize<double>(a, x.cview(), y.view());
  return y.v;
}

void check_close(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i)
    CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-6));
}

} // namespace

TEST_CASE("resize: nearest (upsample2d's meaning), values and the block-sum gradient") {
  const TensorD x({1, 1, 2, 2}, {1, 2, 3, 4});
  const Attrs a = resize_attrs(ResizeMode::nearest, CoordinateMode::asymmetric, NearestMode::floor,
                               {0, 0}, {2, 2});
  CHECK(infer_shape(OpKind::resize, a, std::vector<Shape>{x.shape}) == Shape{1, 1, 4, 4});
  CHECK(resized(a, x, {1, 1, 4, 4}) ==
        std::vector<double>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
  TensorD dy({1, 1, 4, 4}), dx({1, 1, 2, 2});
  for (size_t i = 0; i < 16; ++i)
    dy[i] = double(i);
  resize_backward<double>(a, dy.cview(), dx.view(), false);
  CHECK(dx.v ==
        std::vector<double>{0 + 1 + 4 + 5, 2 + 3 + 6 + 7, 8 + 9 + 12 + 13, 10 + 11 + 14 + 15});
}

TEST_CASE("resize: values as PyTorch computes them") {
  const TensorD x({1, 1, 2, 2}, {1, 2, 3, 4});
  // F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
  check_close(resized(resize_attrs(ResizeMode::linear, CoordinateMode::half_pixel,
                                   NearestMode::floor, {4, 4}, {2, 2}),
                      x, {1, 1, 4, 4}),
              {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4});
  // F.interpolate(x, size=(3, 3), mode="bilinear", align_corners=True)
  check_close(resized(resize_attrs(ResizeMode::linear, CoordinateMode::align_corners,
                                   NearestMode::floor, {3, 3}),
                      x, {1, 1, 3, 3}),
              {1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4});
  // A 1-row output: pytorch_half_pixel reads row 0, half_pixel the middle.
  const TensorD col({1, 1, 2, 1}, {1, 3});
  check_close(resized(resize_attrs(ResizeMode::linear, CoordinateMode::pytorch_half_pixel,
                                   NearestMode::floor, {1, 1}),
                      col, {1, 1, 1, 1}),
              {1});
  check_close(resized(resize_attrs(ResizeMode::linear, CoordinateMode::half_pixel,
                                   NearestMode::floor, {1, 1}),
                      col, {1, 1, 1, 1}),
              {2});
  // Downscaling 5 -> 2: nearest (asymmetric, floor) reads 0, 2; "nearest-exact" (half_pixel,
  // round_prefer_ceil... as ONNX Runtime rounds 2o + 0.5 up) reads 1, 3.
  const TensorD row({1, 1, 1, 5}, {10, 11, 12, 13, 14});
  check_close(resized(resize_attrs(ResizeMode::nearest, CoordinateMode::asymmetric,
                                   NearestMode::floor, {1, 2}, {1, 0.5}),
                      row, {1, 1, 1, 2}),
              {10, 12});
  check_close(resized(resize_attrs(ResizeMode::nearest, CoordinateMode::half_pixel,
                                   NearestMode::round_prefer_ceil, {1, 2}, {1, 0.5}),
                      row, {1, 1, 1, 2}),
              {11, 13});
  check_close(resized(resize_attrs(ResizeMode::nearest, CoordinateMode::half_pixel,
                                   NearestMode::round_prefer_floor, {1, 2}, {1, 0.5}),
                      row, {1, 1, 1, 2}),
              {10, 12});
  // Scale 1.5 on 4 columns: floor(6) outputs; bilinear half_pixel (numbers from PyTorch).
  const TensorD r4({1, 1, 1, 4}, {0, 1, 2, 3});
  check_close(resized(resize_attrs(ResizeMode::linear, CoordinateMode::half_pixel,
                                   NearestMode::floor, {1, 6}, {1, 1.5}),
                      r4, {1, 1, 1, 6}),
              {0, 0.5, 1 + 1.0 / 6, 2 - 1.0 / 6, 2.5, 3});
}

TEST_CASE("resize: the shape rule and its errors") {
  Attrs a;
  const std::vector<Shape> x{{1, 2, 5, 7}};
  a.scale = {1.5, 0.5};
  CHECK(infer_shape(OpKind::resize, a, x) == Shape{1, 2, 7, 3});
  a.size = {9, 0};
  CHECK(infer_shape(OpKind::resize, a, x) == Shape{1, 2, 9, 3});
  Attrs none;
  none.scale = {0, 0};
  CHECK_THROWS_AS(infer_shape(OpKind::resize, none, x), Error);
  a.scale = {0.1, 1};
  a.size = {0, 0};
  CHECK_THROWS_AS(infer_shape(OpKind::resize, a, x), Error); // no output row
  a.mode = 7;
  a.scale = {2, 2};
  CHECK_THROWS_AS(infer_shape(OpKind::resize, a, x), Error);
}

TEST_CASE("resize: finite-difference gradients and accumulation, every mode") {
  Rng rng(47);
  const Shape xs{2, 2, 5, 4};
  struct Case {
    ResizeMode m;
    CoordinateMode c;
    NearestMode r;
    Int2 size;
    Num2 scale;
  };
  const Case cases[] = {
      {ResizeMode::nearest, CoordinateMode::asymmetric, NearestMode::floor, {0, 0}, {3, 2}},
      {ResizeMode::nearest,
       CoordinateMode::half_pixel,
       NearestMode::round_prefer_floor,
       {7, 3},
       {0, 0}},
      {ResizeMode::nearest, CoordinateMode::asymmetric, NearestMode::ceil, {0, 0}, {0.6, 1.75}},
      {ResizeMode::nearest,
       CoordinateMode::pytorch_half_pixel,
       NearestMode::round_prefer_ceil,
       {11, 9},
       {0, 0}},
      {ResizeMode::linear, CoordinateMode::half_pixel, NearestMode::floor, {0, 0}, {2, 2}},
      {ResizeMode::linear, CoordinateMode::pytorch_half_pixel, NearestMode::floor, {3, 1}, {0, 0}},
      {ResizeMode::linear, CoordinateMode::align_corners, NearestMode::floor, {9, 7}, {0, 0}},
      {ResizeMode::linear, CoordinateMode::asymmetric, NearestMode::floor, {0, 0}, {1.5, 0.75}},
  };
  int k = 0;
  for (const Case& c : cases) {
    const Attrs a = resize_attrs(c.m, c.c, c.r, c.size, c.scale);
    const Shape ys = infer_shape(OpKind::resize, a, std::vector<Shape>{xs});
    TensorD xr = random_tensor(xs, rng), g(xs);
    const TensorD d = random_tensor(ys, rng);
    resize_backward<double>(a, d.cview(), g.view(), false);
    const std::string name = cat("resize case ", k++);
    check_grad(name, xr.v, g.v, [&] {
      TensorD out(ys);
      resize<double>(a, xr.cview(), out.view());
      return dot(d, out);
    });
    check_accumulate(
        name, xs, [&](View<double> o, bool acc) { resize_backward<double>(a, d.cview(), o, acc); },
        rng);
  }
}

} // namespace kiln::cpu::test
