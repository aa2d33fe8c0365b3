// Times the CPU reference conv2d (float, one thread) on resnet18's layer shapes at batch 1,
// 224x224, and prints per-layer GMAC/s and the resnet18-equivalent total. Not a test: run
// by hand (`bench_cpu_conv [--backward]`).
#include "runtime/cpu/ops.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

namespace {

using namespace kiln;

struct Layer {
  const char* name;
  int64_t C, H, O, k, s, p, count; // count: how many resnet18 convs have this shape
};

// resnet18 (torchvision), batch 1, 224x224.
const Layer layers[] = {
    {"conv1 7x7/2", 3, 224, 64, 7, 2, 3, 1},       {"layer1 3x3", 64, 56, 64, 3, 1, 1, 4},
    {"layer2.0 3x3/2", 64, 56, 128, 3, 2, 1, 1},   {"layer2 3x3", 128, 28, 128, 3, 1, 1, 3},
    {"layer2 ds 1x1/2", 64, 56, 128, 1, 2, 0, 1},  {"layer3.0 3x3/2", 128, 28, 256, 3, 2, 1, 1},
    {"layer3 3x3", 256, 14, 256, 3, 1, 1, 3},      {"layer3 ds 1x1/2", 128, 28, 256, 1, 2, 0, 1},
    {"layer4.0 3x3/2", 256, 14, 512, 3, 2, 1, 1},  {"layer4 3x3", 512, 7, 512, 3, 1, 1, 3},
    {"layer4 ds 1x1/2", 256, 14, 512, 1, 2, 0, 1},
};

template <class F> double best_seconds(F&& f, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
  }
  return best;
}

} // namespace

int main(int argc, char** argv) {
  const bool backward = argc > 1 && std::strcmp(argv[1], "--backward") == 0;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  double total_s[3] = {}, total_macs = 0;
  std::printf("%-18s %8s  %10s %10s %10s  (GMAC/s: forward, backward data, backward weight)\n",
              "layer", "MMAC", "fwd", "bwd data", "bwd weight");
  for (const Layer& l : layers) {
    Attrs a;
    a.out_channels = l.O, a.kernel = {l.k, l.k}, a.stride = {l.s, l.s};
    a.padding = {l.p, l.p};
    const int64_t OH = window_out(l.H, l.k, l.s, l.p, 1, false);
    std::vector<float> x(l.C * l.H * l.H), w(l.O * l.C * l.k * l.k), y(l.O * OH * OH);
    for (float& v : x)
      v = dist(rng);
    for (float& v : w)
      v = dist(rng);
    for (float& v : y)
      v = dist(rng);
    const cpu::CView<float> xv{x.data(), {1, l.C, l.H, l.H}}, wv{w.data(), {l.O, l.C, l.k, l.k}};
    const cpu::View<float> yv{y.data(), {1, l.O, OH, OH}};
    const cpu::CView<float> dyv{y.data(), yv.shape};
    std::vector<float> dx(x.size()), dw(w.size());
    const double macs = double(l.O * OH * OH) * double(l.C * l.k * l.k);
    double t[3] = {};
    t[0] = best_seconds([&] { cpu::conv2d<float>(a, xv, wv, nullptr, yv); }, 3);
    if (backward) {
      t[1] = best_seconds(
          [&] {
            cpu::conv2d_backward_data<float>(a, dyv, wv, {dx.data(), xv.shape}, false);
          },
          2);
      t[2] = best_seconds(
          [&] {
            cpu::conv2d_backward_weight<float>(a, xv, dyv, {dw.data(), wv.shape}, false);
          },
          2);
    }
    std::printf("%-18s %8.1f x%-2lld", l.name, macs / 1e6, (long long)l.count);
    for (int i = 0; i < 3; ++i) {
      std::printf(" %10.2f", t[i] > 0 ? macs / t[i] / 1e9 : 0.0);
      total_s[i] += t[i] * double(l.count);
    }
    std::printf("\n");
    total_macs += macs * double(l.count);
  }
  std::printf("resnet18 convs: %.3f GMAC; forward %.3f s (%.2f GMAC/s)", total_macs / 1e9,
              total_s[0], total_macs / total_s[0] / 1e9);
  if (backward)
    std::printf("; backward data %.3f s, backward weight %.3f s", total_s[1], total_s[2]);
  std::printf("\n");
}
