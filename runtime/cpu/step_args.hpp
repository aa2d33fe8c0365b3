// A step's arguments as a function's CPU reference (FnDef::cpu_f32 / cpu_f64) sees them:
// float arguments as T in NCHW order (the arena itself, or a staged copy the reference
// driver converts in and out), integer ones as they are in the arena.
#pragma once

#include "runtime/cpu/ops.hpp"
#include "runtime/half.hpp"
#include "runtime/plan.hpp"

#include <array>
#include <cstddef>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kiln::cpu {

template <class T> struct StepArgs {
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
  T* opt_out(std::string_view role) const {
    const int b = s.arg(role);
    return b < 0 ? nullptr : ptr(b);
  }
  const Shape& shape(std::string_view role) const { return p.buffers[s.need(role)].shape; }
  std::vector<CView<T>> inputs() const {
    std::vector<CView<T>> xs;
    for (int b : s.variadic('x'))
      xs.push_back({ptr(b), p.buffers[b].shape});
    return xs;
  }
  // An integer argument (sparse forms' index, count and nnz), in the arena as it is.
  template <class U> U* raw(std::string_view role) const {
    const int b = s.arg(role);
    return b < 0 ? nullptr : reinterpret_cast<U*>(arena + p.byte_offset(b));
  }
  std::span<const int64_t> targets() const {
    const int b = s.need("target");
    return {reinterpret_cast<const int64_t*>(arena + p.byte_offset(b)),
            size_t(numel(p.buffers[b].shape))};
  }
};

// x as a conv with a fused squeeze-excite gate reads it (generator/rewrite/gates.cpp):
// x[n][c][h][w] * gate[n][c], each product rounded to x's element type, as the mul step the
// gate replaced stored it; x itself where the step has no gate. `scratch` holds the product.
template <class T> CView<T> gated_x(const StepArgs<T>& c, std::vector<T>& scratch) {
  const CView<T> x = c.in("x");
  const T* g = c.opt("gate");
  if (!g) return x;
  const DType dt = c.p.buffers[c.s.need("x")].dtype;
  const int64_t nc = x.shape[0] * x.shape[1], hw = numel(x.shape) / nc;
  scratch.resize(size_t(numel(x.shape)));
  for (int64_t i = 0; i < nc; ++i)
    for (int64_t j = 0; j < hw; ++j) {
      const double v = double(x.data[i * hw + j]) * double(g[i]);
      const float f = float(v);
      scratch[size_t(i * hw + j)] = dt == DType::f16    ? T(round_to_half(f))
                                    : dt == DType::bf16 ? T(round_to_bf16(f))
                                    : dt == DType::f32  ? T(f)
                                                        : T(v);
    }
  return {scratch.data(), x.shape};
}

// The activation of the step's epilogue on every element of y.
template <class T> void apply_activation(Activation a, View<T> y) {
  if (a == Activation::none) return;
  for (int64_t i = 0, n = numel(y.shape); i < n; ++i)
    y.data[i] = T(activate(a, double(y.data[i])));
}

// The fused epilogue of a forward that wrote y (bias included): y += residual, then the
// activation.
template <class T> void epilogue(const StepArgs<T>& c) {
  View<T> y = c.out("y");
  if (const T* r = c.opt("residual")) {
    std::array<CView<T>, 2> xs{CView<T>{y.data, y.shape}, CView<T>{r, y.shape}};
    add<T>(xs, y);
  }
  apply_activation(c.s.epilogue.activation, y);
}

} // namespace kiln::cpu
