#include "generator/run/density_profile.hpp"

#include "generator/lower/lower.hpp"
#include "generator/run/generated_run.hpp"
#include "generator/run/model_input.hpp"
#include "generator/run/model_source.hpp"
#include "runtime/cpu/backend.hpp"
#include "runtime/error.hpp"
#include "runtime/executor.hpp"

#include <chrono>
#include <map>

namespace kiln {

DensityRun measure_densities(const Model& m, const Tensor& input, const DensityOptions& o) {
  // The values the conv2d layers read, in model order; each becomes an extra output after
  // the model's own (so the plan keeps it in a persistent buffer and nothing changes for
  // the real outputs). The model input is read from its own buffer.
  Model pm = m;
  std::map<int, size_t> output_of; // value -> index into the plan's outputs
  for (size_t k = 0; k < m.outputs.size(); ++k)
    output_of.emplace(m.outputs[k], k);
  std::vector<int> convs;
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    if (m.nodes[i].op != OpKind::conv2d) continue;
    convs.push_back(int(i));
    const int r = m.nodes[i].inputs[0];
    if (r != kModelInput && output_of.emplace(r, pm.outputs.size()).second) pm.outputs.push_back(r);
  }
  if (convs.empty())
    throw Error(m.file, "", cat("model \"", m.name, "\" has no conv2d layer to profile"));

  Plan plan;
  std::unique_ptr<Backend> backend;
  if (o.device == "cpu") {
    plan = lower_model(pm, LowerOptions{});
    backend = std::make_unique<cpu::CpuBackend>();
  } else {
    GeneratedRun gr = prepare_generated(pm, o.gpu, GenerateOptions{}, o.device, o.progress);
    plan = std::move(gr.plan);
    backend = std::move(gr.backend);
  }
  ExecutorOptions eo;
  if (o.on_plan) eo.on_step = o.on_plan(plan);
  Executor ex(plan, *backend, eo);
  bind_initial_weights(ex, plan, o.weights, o.model, o.seed);
  ex.write(plan.inputs[0], input);
  const auto t0 = std::chrono::steady_clock::now();
  ex.run("forward");
  DensityRun r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  Profile& p = r.profile;
  p.model = m.name;
  p.input_shape = m.input_shape;
  p.dtype = m.dtype;
  p.device = o.device;
  p.input = o.input;
  p.weights = !o.weights.empty()            ? o.weights
              : model_file_weights(o.model) ? o.model
                                            : cat("seeded ", o.seed);
  p.tile = o.tile;
  std::map<int, LayerProfile> measured; // by value: convs reading the same value share it
  for (int c : convs) {
    const int v = m.nodes[size_t(c)].inputs[0];
    auto it = measured.find(v);
    if (it == measured.end()) {
      const Tensor x = ex.read(v == kModelInput ? plan.inputs[0] : plan.outputs[output_of.at(v)]);
      it = measured.emplace(v, measure_density(x, o.tile)).first;
    }
    LayerProfile l = it->second;
    l.layer = m.nodes[size_t(c)].name;
    l.input = m.name_of(v);
    p.densities.push_back(std::move(l));
  }
  return r;
}

} // namespace kiln
