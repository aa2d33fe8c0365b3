// Central differences of a training plan's loss against a parameter's gradient: the check
// the gradient tests share (test_lowering, test_train_recipe, test_signal_plan).
#pragma once

#include "runtime/executor.hpp"
#include "runtime/plan.hpp"
#include "runtime/tensor.hpp"

#include <algorithm>
#include <cmath>
#include <doctest/doctest.h>
#include <functional>

// For about `samples` elements i of parameter p: (loss(w_i + eps) - loss(w_i - eps)) / 2 eps
// against g[i], within 1e-6 relative (eps 1e-6, f64 plans); p is restored. Returns how many
// elements it checked.
inline int check_finite_differences(kiln::Executor& ex, const kiln::ParamBinding& p,
                                    const kiln::Tensor& g, const std::function<double()>& loss,
                                    int64_t samples) {
  kiln::Tensor w = ex.read(p.buffer);
  int checked = 0;
  for (int64_t i = 0; i < w.numel(); i += std::max<int64_t>(1, w.numel() / samples)) {
    const double orig = w.get(i), eps = 1e-6;
    w.set(i, orig + eps);
    ex.write(p.buffer, w);
    const double up = loss();
    w.set(i, orig - eps);
    ex.write(p.buffer, w);
    const double down = loss();
    w.set(i, orig);
    ex.write(p.buffer, w);
    const double fd = (up - down) / (2 * eps);
    INFO(p.name << "[" << i << "]: analytic " << g.get(i) << ", numeric " << fd);
    CHECK(std::abs(g.get(i) - fd) <= 1e-6 * std::max(1.0, std::abs(fd)));
    ++checked;
  }
  return checked;
}
