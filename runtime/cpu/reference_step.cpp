#include "runtime/cpu/reference_step.hpp"

#include "runtime/cpu/ops.hpp"
#include "runtime/error.hpp"
#include "runtime/half.hpp"
#include "runtime/sparse_form.hpp"
#include "runtime/tensor.hpp"

#include <cmath>
#include <cstring>
#include <unordered_map>

#include <vector>

namespace kiln::cpu {

namespace {

// Where each argument's data lives for the reference: the arena itself when the buffer
// already holds T in NCHW order, otherwise a staged copy converted in and out.
template <class T> struct Bound {
  const Plan& p;
  const Step& s;
  std::byte* arena;
  std::unordered_map<int, T*> where;

  T* ptr(int b) const { return where.at(b); }
  View<T> out(std::string_view role) const {
    const int b = s.need(role);
    return {ptr(b), p.buffers[b].shape};
  }
  CView<T> in(std::string_view role) const {
    const int b = s.need(role);
    return {ptr(b), p.buffers[b].shape};
  }
  const T* opt(std::string_view role) const {
    const int b = s.arg(role);
    return b < 0 ? nullptr : ptr(b);
  }
  std::vector<CView<T>> inputs() const {
    std::vector<CView<T>> xs;
    for (int b : s.variadic('x'))
      xs.push_back({ptr(b), p.buffers[b].shape});
    return xs;
  }
  // An integer argument (sparse forms' index, count and nnz), in the arena as it is.
  template <class U> U* raw(std::string_view role) const {
    const int b = s.arg(role);
    return b < 0 ? nullptr : reinterpret_cast<U*>(arena + p.buffers[b].offset);
  }
  std::span<const int64_t> targets() const {
    const int b = s.need("target");
    return {reinterpret_cast<const int64_t*>(arena + p.buffers[b].offset),
            size_t(numel(p.buffers[b].shape))};
  }
};

// Memory index of logical (NCHW-order) element i of a buffer.
int64_t memory_index(const Buffer& b, int64_t i) {
  if (b.layout == Layout::nchw) return i;
  const int64_t C = b.shape[1], H = b.shape[2], W = b.shape[3];
  const int64_t w = i % W, h = (i / W) % H, c = (i / (W * H)) % C, n = i / (W * H * C);
  return ((n * H + h) * W + w) * C + c;
}

double load(const Buffer& b, const std::byte* arena, int64_t i) {
  const std::byte* p = arena + b.offset + memory_index(b, i) * int64_t(dtype_size(b.dtype));
  uint16_t h;
  switch (b.dtype) {
  case DType::f16: std::memcpy(&h, p, 2); return half_bits_to_float(h);
  case DType::bf16: std::memcpy(&h, p, 2); return bf16_bits_to_float(h);
  case DType::f32: {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  case DType::f64: {
    double d;
    std::memcpy(&d, p, 8);
    return d;
  }
  default: throw Error("", b.name, "the reference reads float buffers only");
  }
}

void store(const Buffer& b, std::byte* arena, int64_t i, double v) {
  std::byte* p = arena + b.offset + memory_index(b, i) * int64_t(dtype_size(b.dtype));
  uint16_t h;
  switch (b.dtype) {
  case DType::f16:
    h = float_to_half_bits(float(v));
    std::memcpy(p, &h, 2);
    break;
  case DType::bf16:
    h = float_to_bf16_bits(float(v));
    std::memcpy(p, &h, 2);
    break;
  case DType::f32: {
    float f = float(v);
    std::memcpy(p, &f, 4);
    break;
  }
  case DType::f64: std::memcpy(p, &v, 8); break;
  default: throw Error("", b.name, "the reference writes float buffers only");
  }
}

// A slice of a wide concat writes part of y: the rest must survive staging.
bool writes_part(const Plan& p, const Step& s) {
  if (s.fn == Fn::region_copy) return true;
  if (s.fn != Fn::concat_forward) return false;
  int64_t channels = 0;
  for (int b : s.variadic('x'))
    channels += p.buffers[b].shape[1];
  return s.channel_offset != 0 || channels != p.buffers[s.need("y")].shape[1];
}

bool writes(const Step& s, const std::string& role) { return fn_writes(s.fn, role); }

// x as the sparse steps' reference reads it: decompacted from values, index and count.
template <class T> std::vector<T> decompacted(const Bound<T>& c, const Shape& x) {
  std::vector<T> dense(size_t(numel(x)));
  const int64_t cs = c.p.buffers[c.s.need("values")].shape[2];
  decompact<T>(c.in("values").data, c.template raw<uint8_t>("index"),
               c.template raw<uint8_t>("count"), cs, View<T>{dense.data(), x});
  return dense;
}

// The fused epilogue of conv2d / linear: y += residual, then relu.
template <class T> void epilogue(const Bound<T>& c) {
  View<T> y = c.out("y");
  if (const T* r = c.opt("residual")) {
    CView<T> res{r, y.shape};
    std::array<CView<T>, 2> xs{CView<T>{y.data, y.shape}, res};
    add<T>(xs, y);
  }
  if (c.s.relu) relu<T>(CView<T>{y.data, y.shape}, y);
}

// Batchnorm (inference) folded into the preceding convolution: with s = gamma / sqrt(var +
// eps), w_out = w * s per output channel and b_out = (b - mean) * s + beta.
template <class T> void fold_bn(const Bound<T>& c) {
  CView<T> w = c.in("w");
  View<T> wo = c.out("w_out");
  const T* b = c.opt("b");
  const T *gamma = c.in("weight").data, *beta = c.in("bias").data;
  const T *mean = c.in("running_mean").data, *var = c.in("running_var").data;
  T* bo = c.out("b_out").data;
  const int64_t o = w.shape[0], per = numel(w.shape) / o;
  for (int64_t k = 0; k < o; ++k) {
    const double s = double(gamma[k]) / std::sqrt(double(var[k]) + c.s.eps);
    for (int64_t i = 0; i < per; ++i)
      wo.data[k * per + i] = T(double(w.data[k * per + i]) * s);
    bo[k] = T(((b ? double(b[k]) : 0.0) - double(mean[k])) * s + double(beta[k]));
  }
}

template <class T> void run(const Bound<T>& c) {
  const Step& s = c.s;
  const Attrs& a = s.attrs;
  const bool acc = s.accumulate;
  switch (s.fn) {
  case Fn::conv2d_forward:
    conv2d<T>(a, c.in("x"), c.in("w"), c.opt("b"), c.out("y"));
    epilogue(c);
    break;
  case Fn::conv2d_pool_forward: {
    // The conv and its epilogue into a temporary, then the pool.
    CView<T> x = c.in("x");
    const Shape ys = infer_shape(OpKind::conv2d, a, std::span<const Shape>(&x.shape, 1));
    std::vector<T> y(size_t(numel(ys)));
    conv2d<T>(a, x, c.in("w"), c.opt("b"), View<T>{y.data(), ys});
    if (s.relu) relu<T>(CView<T>{y.data(), ys}, View<T>{y.data(), ys});
    maxpool2d<T>(s.pool, CView<T>{y.data(), ys}, c.out("y"));
    break;
  }
  case Fn::conv2d_fold_bn: fold_bn(c); break;
  case Fn::conv2d_backward_data:
    conv2d_backward_data<T>(a, c.in("dy"), c.in("w"), c.out("dx"), acc);
    break;
  case Fn::conv2d_backward_weight:
    conv2d_backward_weight<T>(a, c.in("x"), c.in("dy"), c.out("dw"), acc);
    break;
  case Fn::linear_forward:
    linear<T>(c.in("x"), c.in("w"), c.opt("b"), c.out("y"));
    epilogue(c);
    break;
  case Fn::linear_backward_data:
    linear_backward_data<T>(c.in("dy"), c.in("w"), c.out("dx"), acc);
    break;
  case Fn::linear_backward_weight:
    linear_backward_weight<T>(c.in("x"), c.in("dy"), c.out("dw"), acc);
    break;
  case Fn::bias_backward: bias_backward<T>(c.in("dy"), c.out("db").data, acc); break;
  case Fn::batchnorm_forward:
    batchnorm_inference<T>(a, c.in("x"), c.in("weight").data, c.in("bias").data,
                           c.in("running_mean").data, c.in("running_var").data, c.out("y"));
    epilogue(c);
    break;
  case Fn::batchnorm_forward_train:
    batchnorm_train<T>(a, c.in("x"), c.in("weight").data, c.in("bias").data, c.out("y"),
                       c.s.arg("mean") >= 0 ? c.out("mean").data : nullptr,
                       c.s.arg("invstd") >= 0 ? c.out("invstd").data : nullptr);
    break;
  case Fn::batchnorm_backward:
    if (s.arg("mean") >= 0) {
      batchnorm_backward<T>(c.in("x"), c.in("dy"), c.in("weight").data, c.in("mean").data,
                            c.in("invstd").data, c.out("dx"), c.out("dweight").data,
                            c.out("dbias").data, acc);
    } else { // recompute the statistics exactly as batchnorm.forward_train does
      CView<T> x = c.in("x");
      std::vector<T> y(size_t(numel(x.shape))), mean(size_t(x.shape[1])),
          invstd(size_t(x.shape[1]));
      batchnorm_train<T>(a, x, c.in("weight").data, nullptr, View<T>{y.data(), x.shape},
                         mean.data(), invstd.data());
      batchnorm_backward<T>(x, c.in("dy"), c.in("weight").data, mean.data(), invstd.data(),
                            c.out("dx"), c.out("dweight").data, c.out("dbias").data, acc);
    }
    break;
  case Fn::relu_forward: relu<T>(c.in("x"), c.out("y")); break;
  case Fn::relu_backward: relu_backward<T>(c.in("y"), c.in("dy"), c.out("dx"), acc); break;
  case Fn::maxpool2d_forward: maxpool2d<T>(a, c.in("x"), c.out("y")); break;
  case Fn::maxpool2d_backward:
    maxpool2d_backward<T>(a, c.in("x"), c.in("dy"), c.out("dx"), acc);
    break;
  case Fn::avgpool2d_forward: avgpool2d<T>(a, c.in("x"), c.out("y")); break;
  case Fn::avgpool2d_backward: avgpool2d_backward<T>(a, c.in("dy"), c.out("dx"), acc); break;
  case Fn::adaptive_avgpool2d_forward: adaptive_avgpool2d<T>(c.in("x"), c.out("y")); break;
  case Fn::adaptive_avgpool2d_backward:
    adaptive_avgpool2d_backward<T>(c.in("dy"), c.out("dx"), acc);
    break;
  case Fn::add_forward: {
    auto xs = c.inputs();
    add<T>(xs, c.out("y"));
    break;
  }
  case Fn::concat_forward: {
    auto xs = c.inputs();
    View<T> y = c.out("y");
    int64_t channels = 0;
    for (const CView<T>& x : xs)
      channels += x.shape[1];
    if (s.channel_offset == 0 && channels == y.shape[1]) {
      concat<T>(xs, y);
      break;
    }
    // A slice of a wide concat: the inputs' channels at channel_offset.
    const int64_t n = y.shape[0], inner = numel(y.shape) / (n * y.shape[1]);
    int64_t at = s.channel_offset;
    for (const CView<T>& x : xs) {
      const int64_t cx = x.shape[1];
      for (int64_t b = 0; b < n; ++b)
        std::copy_n(x.data + b * cx * inner, cx * inner, y.data + (b * y.shape[1] + at) * inner);
      at += cx;
    }
    break;
  }
  case Fn::concat_backward:
    concat_backward<T>(c.in("dy"), s.channel_offset, c.out("dx"), acc);
    break;
  case Fn::upsample2d_forward: upsample2d<T>(a, c.in("x"), c.out("y")); break;
  case Fn::upsample2d_backward: upsample2d_backward<T>(a, c.in("dy"), c.out("dx"), acc); break;
  case Fn::softmax_forward: softmax<T>(c.in("x"), c.out("y")); break;
  case Fn::softmax_backward: softmax_backward<T>(c.in("y"), c.in("dy"), c.out("dx"), acc); break;
  case Fn::softmax_xent_forward: {
    const double loss = softmax_cross_entropy<T>(c.in("logits"), c.targets(), c.out("probs"));
    c.out("loss").data[0] = T(loss);
    break;
  }
  case Fn::softmax_xent_backward:
    softmax_cross_entropy_backward<T>(c.in("probs"), c.targets(), c.out("dlogits"), acc);
    break;
  case Fn::copy:
  case Fn::convert: copy<T>(c.in("src"), c.out("dst"), acc); break;
  case Fn::region_copy: {
    CView<T> src = c.in("src");
    View<T> dst = c.out("dst");
    const int64_t nc = src.shape[0] * src.shape[1];
    const int64_t sh = src.shape[2], sw = src.shape[3], dh = dst.shape[2], dw = dst.shape[3];
    for (int64_t p = 0; p < nc; ++p)
      for (int64_t i = 0; i < s.extent[0]; ++i) {
        const T* from = src.data + (p * sh + s.src_origin[0] + i) * sw + s.src_origin[1];
        T* to = dst.data + (p * dh + s.dst_origin[0] + i) * dw + s.dst_origin[1];
        for (int64_t j = 0; j < s.extent[1]; ++j)
          to[j] = acc ? T(double(to[j]) + double(from[j])) : from[j];
      }
    break;
  }
  case Fn::fill_zero: {
    View<T> dst = c.out("dst");
    std::fill_n(dst.data, numel(dst.shape), T(0));
    break;
  }
  case Fn::sgd_update:
    sgd_update<T>(c.out("param"), c.in("grad"),
                  s.arg("velocity") >= 0 ? c.out("velocity").data : nullptr,
                  SgdHyper{s.lr, s.weight_decay, s.momentum});
    break;
  case Fn::adam_update: {
    const int32_t* t = c.template raw<int32_t>("step");
    adam_update<T>(c.out("param"), c.in("grad"), c.out("m").data, c.out("v").data, t ? *t : 0,
                   AdamHyper{s.lr, s.beta1, s.beta2, s.eps, s.weight_decay});
    break;
  }
  case Fn::mse_forward: c.out("loss").data[0] = T(mse<T>(c.in("logits"), c.in("target"))); break;
  case Fn::mse_backward:
    mse_backward<T>(c.in("logits"), c.in("target"), c.out("dlogits"), acc);
    break;
  case Fn::sparse_compact: {
    CView<T> x = c.in("x");
    const int64_t cs = c.p.buffers[s.need("values")].shape[2];
    const int64_t nnz = compact<T>(x, c.out("values").data, c.template raw<uint8_t>("index"),
                                   c.template raw<uint8_t>("count"), cs);
    if (int32_t* total = c.template raw<int32_t>("nnz")) *total += int32_t(nnz);
    break;
  }
  case Fn::conv2d_forward_sparse: {
    const Shape& xs = c.p.buffers[s.need("x")].shape;
    const std::vector<T> x = decompacted(c, xs);
    conv2d<T>(a, CView<T>{x.data(), xs}, c.in("w"), c.opt("b"), c.out("y"));
    epilogue(c);
    break;
  }
  case Fn::conv2d_backward_weight_sparse: {
    const Shape& xs = c.p.buffers[s.need("x")].shape;
    std::vector<T> x = decompacted(c, xs);
    if (s.arg("dw") >= 0) {
      conv2d_backward_weight<T>(a, CView<T>{x.data(), xs}, c.in("dy"), c.out("dw"), acc);
      break;
    }
    // Partial sums: range r of the input's rows (n * H + h) contributes partial[r] alone.
    View<T> part = c.out("partial");
    const int64_t S = part.shape[0], R = xs[0] * xs[2], C = xs[1], H = xs[2], W = xs[3];
    const Shape w(part.shape.begin() + 1, part.shape.end());
    std::vector<T> xr(x.size());
    for (int64_t r = 0; r < S; ++r) {
      std::fill(xr.begin(), xr.end(), T(0));
      for (int64_t row = r * R / S; row < (r + 1) * R / S; ++row)
        for (int64_t ch = 0; ch < C; ++ch) {
          const int64_t at = ((row / H * C + ch) * H + row % H) * W;
          std::copy_n(x.begin() + at, W, xr.begin() + at);
        }
      conv2d_backward_weight<T>(a, CView<T>{xr.data(), xs}, c.in("dy"),
                                View<T>{part.data + r * numel(w), w}, false);
    }
    break;
  }
  case Fn::partial_sum: {
    CView<T> part = c.in("partial");
    View<T> dst = c.out("dst");
    const int64_t n = numel(dst.shape), S = numel(part.shape) / n;
    // The epilogue of a split-K forward: channel axis 1, logical (NCHW) order.
    const T* bias = c.opt("b");
    const T* res = c.opt("residual");
    const int64_t inner = dst.shape.size() > 2 ? n / (dst.shape[0] * dst.shape[1]) : 1;
    for (int64_t i = 0; i < n; ++i) {
      double v = acc ? double(dst.data[i]) : 0.0;
      for (int64_t r = 0; r < S; ++r)
        v += double(part.data[r * n + i]);
      if (bias) v += double(bias[(i / inner) % dst.shape[1]]);
      if (res) v += double(res[i]);
      if (s.relu && !(v > 0)) v = 0;
      dst.data[i] = T(v);
    }
    break;
  }
  case Fn::conv2d_forward_partial:
  case Fn::linear_forward_partial: {
    // Slice r: the forward with every weight outside k range r zeroed (k = (kh * KW + kw) *
    // C + c of OIHW weights; f of a linear's).
    CView<T> w = c.in("w");
    View<T> part = c.out("partial");
    const bool conv = s.fn == Fn::conv2d_forward_partial;
    const int64_t O = w.shape[0], per = numel(w.shape) / O;
    const int64_t C = w.shape[1], KK = conv ? w.shape[2] * w.shape[3] : 1;
    const int64_t N = c.in("x").shape[0], S = part.shape[0] / N;
    Shape ys = part.shape;
    ys[0] = N;
    std::vector<T> wr(size_t(numel(w.shape)));
    for (int64_t r = 0; r < S; ++r) {
      const int64_t kb = split_k_begin(per, S, r), ke = split_k_begin(per, S, r + 1);
      for (int64_t o = 0; o < O; ++o)
        for (int64_t j = 0; j < per; ++j) { // j = c * KK + tap in OIHW order
          const int64_t k = conv ? (j % KK) * C + j / KK : j;
          wr[size_t(o * per + j)] = k >= kb && k < ke ? w.data[o * per + j] : T(0);
        }
      View<T> slice{part.data + r * numel(ys), ys};
      if (conv)
        conv2d<T>(a, c.in("x"), CView<T>{wr.data(), w.shape}, nullptr, slice);
      else
        linear<T>(c.in("x"), CView<T>{wr.data(), w.shape}, nullptr, slice);
    }
    break;
  }
  }
}

} // namespace

void run_reference_step(const Plan& plan, const Step& step, std::byte* arena) {
  if (step.guard != Guard::none) {
    int32_t nnz;
    std::memcpy(&nnz, arena + plan.buffers[step.need("nnz")].offset, 4);
    if (!guard_passes(step.guard, step.threshold, nnz)) return; // the other path computes
  }
  if (step.fn == Fn::fill_zero && !is_float(plan.buffers[step.need("dst")].dtype)) {
    const Buffer& b = plan.buffers[step.need("dst")]; // an integer count
    std::memset(arena + b.offset, 0, size_t(b.bytes()));
    return;
  }
  // A producer that compacts its output: the step, then the compaction of y as stored.
  if (step.arg(kFormOfY.values) >= 0) {
    Step main = step, pack = step;
    std::erase_if(main.args, [](const Arg& a) { return is_form_role(a.role, kFormOfY); });
    run_reference_step(plan, main, arena);
    pack.fn = Fn::sparse_compact;
    pack.relu = false;
    pack.guard = Guard::none;
    pack.args.clear();
    for (const Arg& a : step.args)
      if (a.role == "y" || is_form_role(a.role, kFormOfY))
        pack.args.push_back(
            {a.role == "y" ? "x" : a.role.substr(2), a.buffer}); // y_values -> values
    run_reference_step(plan, pack, arena);
    return;
  }
  // Compute in double when any float argument is f64, else in float; stage what is not
  // already T in NCHW order.
  bool any_f64 = false;
  for (const Arg& a : step.args)
    any_f64 |= plan.buffers[a.buffer].dtype == DType::f64;
  auto go = [&](auto tag) {
    using T = decltype(tag);
    Bound<T> c{plan, step, arena, {}};
    std::vector<std::vector<T>> staged;
    std::vector<std::pair<int, T*>> write_back;
    for (const Arg& a : step.args) {
      const Buffer& b = plan.buffers[a.buffer];
      if (c.where.count(a.buffer) || !is_float(b.dtype)) continue; // integers: raw<U>
      if (b.dtype == dtype_of<T>() && b.layout == Layout::nchw) {
        c.where[a.buffer] = reinterpret_cast<T*>(arena + b.offset);
        continue;
      }
      const int64_t n = numel(b.shape);
      std::vector<T>& v = staged.emplace_back(size_t(n));
      const bool out = writes(step, a.role);
      // Outputs updated in place (an optimizer's parameters and state) are read too.
      if (!out || step.accumulate || writes_part(plan, step) || fn_reads(step.fn, a.role) ||
          fn_updates(step.fn, a.role))
        for (int64_t i = 0; i < n; ++i)
          v[size_t(i)] = T(load(b, arena, i));
      c.where[a.buffer] = v.data();
      if (out) write_back.push_back({a.buffer, v.data()});
    }
    run(c);
    for (auto [buf, data] : write_back) {
      const Buffer& b = plan.buffers[buf];
      for (int64_t i = 0, n = numel(b.shape); i < n; ++i)
        store(b, arena, i, double(data[i]));
    }
  };
  if (any_f64)
    go(double{});
  else
    go(float{});
}

} // namespace kiln::cpu
