// The float and double instantiations agree (1e-6 relative) on the same float-representable
// random inputs, for every op forward and backward.
#include "tests/unit/cpu/cpu_test_util.hpp"

namespace kiln::cpu::test {

namespace {

// f(tag) runs an op with T = decltype(tag) and returns its output as Tensor<T>.
template <class F> void agree(const std::string& what, F&& f) {
  const TensorD d = f(double{});
  const Tensor<float> s = f(float{});
  INFO(what);
  CHECK(max_rel_err(s, d) < 1e-6);
  CHECK(max_rel_err(s, d) >= 0); // not NaN
}

template <class T> const T* ptr(const Tensor<T>& t) { return t.v.data(); }

} // namespace

TEST_CASE("float and double instantiations agree") {
  Rng rng(61);
  const TensorD x = random_floats({2, 4, 9, 8}, rng), w = random_floats({6, 2, 3, 3}, rng);
  const TensorD b = random_floats({6}, rng), dy = random_floats({2, 6, 5, 4}, rng);
  Attrs conv;
  conv.out_channels = 6, conv.kernel = {3, 3}, conv.stride = {2, 2}, conv.padding = {1, 1};
  conv.groups = 2;
  agree("conv2d", [&](auto tag) {
    using T = decltype(tag);
    Tensor<T> y(dy.shape);
    conv2d<T>(conv, convert<T>(x).cview(), convert<T>(w).cview(), ptr(convert<T>(b)), y.view());
    return y;
  });
  agree("conv2d_backward_data", [&](auto tag) {
    using T = decltype(tag);
    Tensor<T> dx(x.shape);
    conv2d_backward_data<T>(conv, convert<T>(dy).cview(), convert<T>(w).cview(), dx.view(), false);
    return dx;
  });
  agree("conv2d_backward_weight", [&](auto tag) {
    using T = decltype(tag);
    Tensor<T> dw(w.shape);
    conv2d_backward_weight<T>(conv, convert<T>(x).cview(), convert<T>(dy).cview(), dw.view(),
                              false);
    return dw;
  });
  agree("bias_backward", [&](auto tag) {
    using T = decltype(tag);
    Tensor<T> db(b.shape);
    bias_backward<T>(convert<T>(dy).cview(), db.v.data(), false);
    return db;
  });

  const TensorD lx = random_floats({3, 40}, rng), lw = random_floats({7, 40}, rng);
  const TensorD ldy = random_floats({3, 7}, rng);
  agree("linear", [&](auto tag) {
    using T = decltype(tag);
    Tensor<T> y(ldy.shape);
    linear<T>(convert<T>(lx).cview(), convert<T>(lw).cview(), nullptr, y.view());
    return y;
  });
  agree("linear_backward_data", [&](auto tag) {
    using T = decltype(tag);
    Tensor<T> dx(lx.shape);
    linear_backward_data<T>(convert<T>(ldy).cview(), convert<T>(lw).cview(), dx.view(), false);
    return dx;
  });
  agree("linear_backward_weight", [&](auto tag) {
    using T = decltype(tag);
    Tensor<T> dw(lw.shape);
    linear_backward_weight<T>(convert<T>(lx).cview(), convert<T>(ldy).cview(), dw.view(), false);
    return dw;
  });

  const TensorD gamma = random_floats({4}, rng, 0.5, 1.5), beta = random_floats({4}, rng);
  const TensorD rvar = random_floats({4}, rng, 0.5, 2), xdy = random_floats(x.shape, rng);
  Attrs bn;
  agree("batchnorm_inference", [&](auto tag) {
    using T = decltype(tag);
    Tensor<T> y(x.shape);
    batchnorm_inference<T>(bn, convert<T>(x).cview(), ptr(convert<T>(gamma)), ptr(convert<T>(beta)),
                           ptr(convert<T>(beta)), ptr(convert<T>(rvar)), y.view());
    return y;
  });
  agree("batchnorm_train + backward", [&](auto tag) {
    using T = decltype(tag);
    const Tensor<T> xt = convert<T>(x), g = convert<T>(gamma);
    Tensor<T> y(x.shape), m({4}), is({4}), dx(x.shape), out({int64_t(2 * x.size() + 8)});
    batchnorm_train<T>(bn, xt.cview(), ptr(g), ptr(convert<T>(beta)), y.view(), m.v.data(),
                       is.v.data());
    batchnorm_backward<T>(xt.cview(), convert<T>(xdy).cview(), ptr(g), ptr(m), ptr(is), dx.view(),
                          out.v.data() + 2 * x.size(), out.v.data() + 2 * x.size() + 4, false);
    std::copy(y.v.begin(), y.v.end(), out.v.begin());
    std::copy(dx.v.begin(), dx.v.end(), out.v.begin() + x.size());
    return out;
  });
  agree("batchnorm_inference_backward", [&](auto tag) {
    using T = decltype(tag);
    Tensor<T> dx(x.shape);
    batchnorm_inference_backward<T>(bn, convert<T>(xdy).cview(), ptr(convert<T>(gamma)),
                                    ptr(convert<T>(rvar)), dx.view(), false);
    return dx;
  });

  Attrs pool;
  pool.kernel = {3, 3}, pool.stride = {2, 2}, pool.padding = {1, 1}, pool.ceil_mode = true;
  pool.count_include_pad = false;
  const Shape py{2, 4, 5, 5};
  const TensorD pdy = random_floats(py, rng);
  agree("maxpool2d + backward", [&](auto tag) {
    using T = decltype(tag);
    Tensor<T> y(py), dx(x.shape);
    maxpool2d<T>(pool, convert<T>(x).cview(), y.view());
    maxpool2d_backward<T>(pool, convert<T>(x).cview(), convert<T>(pdy).cview(), dx.view(), false);
    dx.v.insert(dx.v.end(), y.v.begin(), y.v.end());
    return dx;
  });
  agree("avgpool2d + backward", [&](auto tag) {
    using T = decltype(tag);
    Tensor<T> y(py), dx(x.shape);
    avgpool2d<T>(pool, convert<T>(x).cview(), y.view());
    avgpool2d_backward<T>(pool, convert<T>(pdy).cview(), dx.view(), false);
    dx.v.insert(dx.v.end(), y.v.begin(), y.v.end());
    return dx;
  });
  agree("adaptive_avgpool2d + backward", [&](auto tag) {
    using T = decltype(tag);
    Tensor<T> y({2, 4, 7, 3}), dx(x.shape);
    adaptive_avgpool2d<T>(convert<T>(x).cview(), y.view());
    adaptive_avgpool2d_backward<T>(y.cview(), dx.view(), false);
    dx.v.insert(dx.v.end(), y.v.begin(), y.v.end());
    return dx;
  });

  agree("relu, add, copy, sgd_update", [&](auto tag) {
    using T = decltype(tag);
    const Tensor<T> xt = convert<T>(x), dt = convert<T>(xdy);
    Tensor<T> y(x.shape), dx(x.shape), s(x.shape), p = xt;
    relu<T>(xt.cview(), y.view());
    relu_backward<T>(y.cview(), dt.cview(), dx.view(), false);
    const CView<T> both[] = {xt.cview(), dt.cview()};
    add<T>(both, s.view());
    copy<T>(dt.cview(), s.view(), true);
    sgd_update<T>(p.view(), dt.cview(), 0.1);
    for (const Tensor<T>* t : {&dx, &s, &p})
      y.v.insert(y.v.end(), t->v.begin(), t->v.end());
    return y;
  });
  agree("concat, resize (nearest, bilinear) + backward", [&](auto tag) {
    using T = decltype(tag);
    const Tensor<T> xt = convert<T>(x), dt = convert<T>(xdy);
    Tensor<T> cat_y({2, 8, 9, 8}), back(x.shape), up({2, 4, 27, 24}), upb(x.shape);
    const CView<T> both[] = {xt.cview(), dt.cview()};
    concat<T>(both, cat_y.view());
    concat_backward<T>(cat_y.cview(), 4, back.view(), false);
    Attrs a;
    a.scale = {3, 3};
    resize<T>(a, xt.cview(), up.view());
    resize_backward<T>(a, up.cview(), upb.view(), false);
    Tensor<T> lin({2, 4, 13, 11}), linb(x.shape);
    a.scale = {0, 0};
    a.size = {13, 11};
    a.mode = int64_t(ResizeMode::linear);
    a.coordinate_mode = int64_t(CoordinateMode::half_pixel);
    resize<T>(a, xt.cview(), lin.view());
    resize_backward<T>(a, lin.cview(), linb.view(), false);
    for (const Tensor<T>* t : {&back, &up, &upb, &lin, &linb})
      cat_y.v.insert(cat_y.v.end(), t->v.begin(), t->v.end());
    return cat_y;
  });
  std::vector<int64_t> targets(2 * 9 * 8);
  for (int64_t& t : targets)
    t = int64_t(rng() % 4);
  agree("softmax, cross-entropy + backward", [&](auto tag) {
    using T = decltype(tag);
    const Tensor<T> xt = convert<T>(x);
    Tensor<T> y(x.shape), dx(x.shape), probs(x.shape), dl(x.shape);
    softmax<T>(xt.cview(), y.view());
    softmax_backward<T>(y.cview(), convert<T>(xdy).cview(), dx.view(), false);
    const double loss = softmax_cross_entropy<T>(xt.cview(), targets, probs.view());
    softmax_cross_entropy_backward<T>(probs.cview(), targets, dl.view(), false);
    for (const Tensor<T>* t : {&dx, &probs, &dl})
      y.v.insert(y.v.end(), t->v.begin(), t->v.end());
    y.v.push_back(T(loss));
    return y;
  });
}

} // namespace kiln::cpu::test
