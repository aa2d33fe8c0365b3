// The emulated rate in threads per second: printed, never asserted on (machines differ).
#include "emu_fixture.hpp"

#include <chrono>
#include <cstdio>
#include <functional>

using namespace emu_test;

namespace {

double seconds_of(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

TEST_CASE("emulated rate") {
  const int n = 1 << 20;
  std::vector<float> x(n, 1.0f), y(n, 2.0f);
  std::vector<int> nn{n};
  for (unsigned checks : {0u, unsigned(KILN_EMU_CHECK_ALL)})
    for (unsigned workers : {1u, 2u}) {
      const double s = seconds_of([&] {
        launch("saxpy", config({n / 256, 1, 1}, {256, 1, 1}, checks, workers),
               {buf(x, "x"), buf(y, "y"), buf(nn, "n")});
      });
      std::printf("emu rate: saxpy, %d threads, checks %s, %u worker(s): %.2f M threads/s\n", n,
                  checks ? "on " : "off", workers, n / s * 1e-6);
    }
  const int blocks = 256, threads = 256, rounds = 16; // 32 barriers per thread
  std::vector<float> out(std::size_t(blocks * threads));
  std::vector<int> r{rounds};
  for (unsigned checks : {0u, unsigned(KILN_EMU_CHECK_ALL)})
    for (unsigned workers : {1u, 2u}) {
      const double s = seconds_of([&] {
        launch("exchange_rounds", config({blocks, 1, 1}, {threads, 1, 1}, checks, workers),
               {buf(out, "out"), buf(r, "rounds")});
      });
      const double t = double(blocks) * threads;
      std::printf("emu rate: exchange_rounds (%d barriers per thread), %d threads, checks %s, %u "
                  "worker(s): %.2f M threads/s, %.1f M thread-barriers/s\n",
                  2 * rounds, int(t), checks ? "on " : "off", workers, t / s * 1e-6,
                  t * 2 * rounds / s * 1e-6);
    }
}
