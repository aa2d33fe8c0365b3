// Channel moves: channel_shuffle against the Reshape-Transpose-Reshape it stands for, its
// gradient (the inverse shuffle) and channel_slice's against finite differences, accumulate.
#include "tests/unit/cpu/cpu_test_util.hpp"

namespace kiln::cpu::test {

TEST_CASE("channel_shuffle: y channel k*g + i is x channel i*(C/g) + k") {
  // [1, 6, 1, 1] with 2 groups: x channels 0..5 -> y = 0 3 1 4 2 5 (ShuffleNet's shuffle).
  const TensorD x({1, 6, 1, 1}, {0, 1, 2, 3, 4, 5});
  TensorD y({1, 6, 1, 1});
  channel_shuffle<double>(2, x.cview(), y.view());
  CHECK(y.v == std::vector<double>{0, 3, 1, 4, 2, 5});
  channel_shuffle<double>(3, x.cview(), y.view());
  CHECK(y.v == std::vector<double>{0, 2, 4, 1, 3, 5});
  // The shuffle with C/g groups undoes it.
  TensorD back({1, 6, 1, 1});
  channel_shuffle<double>(2, y.cview(), back.view());
  CHECK(back.v == x.v);
}

TEST_CASE("channel moves: gradients match finite differences, and accumulate") {
  Rng rng(51);
  for (const Shape& s : {Shape{2, 6, 3, 2}, Shape{3, 12}}) {
    TensorD x = random_tensor(s, rng);
    for (int64_t g : {2, 3}) {
      const TensorD dy = random_tensor(s, rng);
      TensorD dx(s);
      channel_shuffle<double>(s[1] / g, dy.cview(), dx.view());
      check_grad("channel_shuffle " + shape_str(s), x.v, dx.v, [&] {
        TensorD y(s);
        channel_shuffle<double>(g, x.cview(), y.view());
        return dot(dy, y);
      });
      check_accumulate(
          "channel_shuffle backward", s,
          [&](View<double> d, bool acc) { channel_shuffle<double>(s[1] / g, dy.cview(), d, acc); },
          rng);
    }
    Shape ys = s;
    ys[1] = 3;
    const TensorD dy = random_tensor(ys, rng);
    TensorD dx(s);
    channel_slice_backward<double>(2, dy.cview(), dx.view(), false);
    check_grad("channel_slice " + shape_str(s), x.v, dx.v, [&] {
      TensorD y(ys);
      channel_slice<double>(2, x.cview(), y.view());
      return dot(dy, y);
    });
    // Accumulating adds dy into channels [2, 5) and leaves the others as they were.
    check_accumulate(
        "channel_slice backward", s,
        [&](View<double> d, bool acc) { channel_slice_backward<double>(2, dy.cview(), d, acc); },
        rng);
  }
}

} // namespace kiln::cpu::test
