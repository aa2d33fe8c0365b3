// The host time of a kernel check (generator/check/kernel_check.hpp) of one layer, its
// device run left out: what kiln bench spends per variant beside the GPU's work.
//   check_host_time LAYERSPEC BATCH IMAGES...
// generates the layer (f16, the h100 descriptor, the cost model's kernel) at BATCH and, for
// each IMAGES (--check-images; 0: every image), times check_step on a device that runs
// nothing (the outputs stay poisoned: the check fails, its host work is all there).
#include "generator/check/kernel_check.hpp"
#include "generator/emit/generate.hpp"
#include "generator/model/overrides.hpp"
#include "generator/select/families/hopper/tensor_map_binding.hpp"
#include "generator/tune/layer_spec.hpp"
#include "generator/tune/sweep.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>

using namespace kiln;

namespace {

class NoDevice : public Backend {
public:
  std::string_view name() const override { return "none"; }
  void prepare(const Plan& plan) override { plan_ = &plan; }
  void upload(int b, const Tensor& t) override { held_[b] = t; }
  Tensor download(int b) override { return held_.at(b); }
  void poison(int b) override {
    held_[b] = Tensor(plan_->buffers[size_t(b)].dtype, plan_->buffers[size_t(b)].shape);
  }
  void run(const Step&) override {}

private:
  const Plan* plan_ = nullptr;
  std::map<int, Tensor> held_;
};

} // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: check_host_time LAYERSPEC BATCH IMAGES...\n");
    return 2;
  }
  Model m = layer_spec_model(argv[1]);
  ModelOverrides o;
  o.batch = std::atoll(argv[2]);
  o.dtype = DType::f16;
  apply_overrides(m, o);
  const GpuDesc g = load_gpu("h100");
  GenerateOptions go;
  go.tuning_db = "none";
  go.sparse = SparseMode::off;
  Generated gen = generate(m, g, go);
  const WorkItem w = sweep_work(gen.plan, gen.layout, g, false).at(0);
  const Step step =
      with_tensor_maps_of(gen.plan, gen.plan.phases[w.phase].steps[w.step], w.variant);
  const Kernel k = kernel_of(w.variant);
  for (int i = 3; i < argc; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    check_step(
        gen.plan, step, k, "fp16", [] { return std::make_unique<NoDevice>(); }, 1,
        CheckOptions{.images = std::atoll(argv[i])});
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%s batch %s, --check-images %s: %.2f s of host time\n", argv[1], argv[2], argv[i],
                s);
  }
  return 0;
}
