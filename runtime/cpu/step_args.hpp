// A step's arguments as a function's CPU reference (FnDef::cpu_f32 / cpu_f64) sees them:
// float arguments as T in NCHW order (the arena itself, or a staged copy the reference
// driver converts in and out), integer ones as they are in the arena.
#pragma once

#include "runtime/cpu/ops.hpp"
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
