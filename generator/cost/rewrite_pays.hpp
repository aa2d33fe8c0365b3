// When a plan rewrite (split-K, conv + pool fusion, a sparse dispatch) replaces what the plan
// would run: only where the cost model predicts it saves a clear share of the time it
// replaces and a clear amount of time. The extra traffic, launches and memory a rewrite
// brings are easy to underestimate, and a small predicted win is inside the model's error.
#pragma once

namespace kiln {

inline constexpr double kRewriteMinShare = 0.15; // of the time replaced
inline constexpr double kRewriteMinUs = 1.0;

inline bool rewrite_pays(double before_us, double after_us) {
  const double win = before_us - after_us;
  return win >= kRewriteMinShare * before_us && win >= kRewriteMinUs;
}

} // namespace kiln
