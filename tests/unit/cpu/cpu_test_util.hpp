// Helpers for the CPU reference op tests: owning tensors, seeded random data, a central
// finite-difference gradient check and the accumulate-semantics check.
#pragma once

#include "runtime/cpu/ops.hpp"
#include "runtime/error.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace kiln::cpu::test {

template <class T> struct Tensor {
  Shape shape;
  std::vector<T> v;
  Tensor() = default;
  explicit Tensor(Shape s, T fill = T(0)) : shape(std::move(s)), v(size_t(numel(shape)), fill) {}
  Tensor(Shape s, std::vector<T> values) : shape(std::move(s)), v(std::move(values)) {
    REQUIRE(int64_t(v.size()) == numel(shape));
  }
  View<T> view() { return {v.data(), shape}; }
  CView<T> cview() const { return {v.data(), shape}; }
  size_t size() const { return v.size(); }
  T& operator[](size_t i) { return v[i]; }
  const T& operator[](size_t i) const { return v[i]; }
};
using TensorD = Tensor<double>;

using Rng = std::mt19937_64;

template <class T = double>
Tensor<T> random_tensor(Shape s, Rng& rng, double lo = -1.0, double hi = 1.0) {
  Tensor<T> t(std::move(s));
  std::uniform_real_distribution<double> d(lo, hi);
  for (T& x : t.v)
    x = T(d(rng));
  return t;
}

// Values at least `gap` apart and off zero (a shuffled ramp), so no max or relu kink is within
// reach of a finite-difference step.
inline TensorD distinct_tensor(Shape s, Rng& rng, double gap = 0.01) {
  TensorD t(std::move(s));
  for (size_t i = 0; i < t.size(); ++i)
    t[i] = (double(i) - double(t.size()) / 2 + 0.5) * gap;
  std::shuffle(t.v.begin(), t.v.end(), rng);
  return t;
}

inline TensorD nan_tensor(Shape s) { return TensorD(std::move(s), std::nan("")); }

template <class T> double dot(const Tensor<T>& a, const Tensor<T>& b) {
  if (a.size() != b.size())
    throw std::logic_error("dot: sizes differ");
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i)
    s += double(a[i]) * double(b[i]);
  return s;
}

// Central differences of f with respect to every element of v (which f reads), against the
// analytic gradient: the largest elementwise error must stay within tol times the largest
// gradient magnitude, and the gradient must not vanish (so the check means something).
inline void check_grad(const std::string& what, std::vector<double>& v,
                       const std::vector<double>& analytic, const std::function<double()>& f,
                       double tol = 1e-6) {
  REQUIRE(v.size() == analytic.size());
  double max_err = 0, max_ref = 0, worst_num = 0, worst_ana = 0;
  size_t worst = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    const double old = v[i], h = 1e-6 * std::max(1.0, std::abs(old));
    const double up = old + h, down = old - h;
    v[i] = up;
    const double fp = f();
    v[i] = down;
    const double fm = f();
    v[i] = old;
    const double num = (fp - fm) / (up - down);
    const double err = std::abs(num - analytic[i]);
    max_ref = std::max({max_ref, std::abs(num), std::abs(analytic[i])});
    if (!(err <= max_err))
      max_err = err, worst = i, worst_num = num, worst_ana = analytic[i];
  }
  INFO(what, ": worst element ", worst, " numeric ", worst_num, " analytic ", worst_ana,
       " (largest gradient ", max_ref, ")");
  CHECK(max_ref > 0);
  CHECK(max_err <= tol * max_ref);
}

// `accumulate` semantics of a backward op writing `out`: into a NaN-poisoned buffer without
// accumulate every element is written; with accumulate onto old contents the result is
// exactly old + fresh (in double, where T(double(old) + r) is old + r).
inline void check_accumulate(const std::string& what, const Shape& out,
                             const std::function<void(View<double>, bool)>& op, Rng& rng) {
  TensorD fresh(out, std::nan(""));
  op(fresh.view(), false);
  TensorD zero(out, 0.0);
  op(zero.view(), false);
  const TensorD old = random_tensor(out, rng);
  TensorD acc = old;
  op(acc.view(), true);
  size_t bad_fresh = 0, bad_acc = 0, nonzero = 0;
  for (size_t i = 0; i < acc.size(); ++i) {
    bad_fresh += !(fresh[i] == zero[i]);
    bad_acc += !(acc[i] == old[i] + fresh[i]);
    nonzero += fresh[i] != 0;
  }
  INFO(what);
  CHECK(bad_fresh == 0);
  CHECK(bad_acc == 0);
  CHECK(nonzero > 0);
}

// Largest elementwise |a - b| relative to the largest |b|.
template <class A, class B> double max_rel_err(const Tensor<A>& a, const Tensor<B>& b) {
  REQUIRE(a.size() == b.size());
  double err = 0, ref = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::abs(double(a[i]) - double(b[i]));
    err = std::isnan(d) ? std::numeric_limits<double>::infinity() : std::max(err, d);
    ref = std::max(ref, std::abs(double(b[i])));
  }
  return ref > 0 ? err / ref : err;
}

template <class T> Tensor<T> convert(const TensorD& t) {
  Tensor<T> r(t.shape);
  for (size_t i = 0; i < t.size(); ++i)
    r[i] = T(t[i]);
  return r;
}

// Random data rounded to float, so the float and double instantiations see the same inputs.
inline TensorD random_floats(Shape s, Rng& rng, double lo = -1.0, double hi = 1.0) {
  TensorD t = random_tensor(std::move(s), rng, lo, hi);
  for (double& x : t.v)
    x = double(float(x));
  return t;
}

} // namespace kiln::cpu::test
