// Work split over the machine's cores for the CPU reference: body(lo, hi) runs on contiguous
// index ranges, each on one thread, and every index once. Results stay bit-identical to a
// serial run where each index writes its own outputs in its own fixed order (the reference
// ops' planes and weights); below `min_work` units of work it runs serially on the caller.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <thread>
#include <vector>

namespace kiln {

template <class Body>
void parallel_ranges(int64_t n, double work, Body&& body, double min_work = 4e6) {
  const int64_t cores = std::max(1u, std::thread::hardware_concurrency());
  const int64_t threads = std::min<int64_t>({cores, n, 64});
  if (threads <= 1 || work < min_work) {
    if (n > 0) body(int64_t(0), n);
    return;
  }
  std::vector<std::thread> pool;
  std::vector<std::exception_ptr> errors(static_cast<size_t>(threads));
  for (int64_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      try {
        body(n * t / threads, n * (t + 1) / threads);
      } catch (...) {
        errors[size_t(t)] = std::current_exception();
      }
    });
  for (std::thread& th : pool)
    th.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

} // namespace kiln
