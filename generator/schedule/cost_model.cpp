#include "generator/schedule/cost_model.hpp"

#include "generator/select/cost.hpp"
#include "runtime/error.hpp"
#include "runtime/io/file.hpp"
#include "runtime/json_util.hpp"

#include <algorithm>

namespace kiln {

namespace {

constexpr double kLaunchUs = 3.0;

std::string math_of(DType t) {
  return t == DType::f16 ? "fp16" : t == DType::bf16 ? "bf16" : "fp32";
}

} // namespace

std::vector<LayerTimes> layer_times(const Model& m, const GpuDesc& g, const Profile* profile) {
  std::vector<LayerTimes> t(m.nodes.size());
  const double esize = double(dtype_size(m.dtype));
  const double peak = peak_tflops(g, math_of(m.dtype)) * 1e6; // flops per microsecond
  const double bw = g.memory_bandwidth_gbps * 1e3;            // bytes per microsecond
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    const Node& n = m.nodes[i];
    if (op_is_view(n.op)) continue;
    double bytes = double(numel(n.shape));
    for (const Shape& s : m.input_shapes(int(i)))
      bytes += double(numel(s));
    for (const ParamSpec& p : m.params(int(i)))
      bytes += double(numel(p.shape));
    bytes *= esize;
    const double flops = 2.0 * double(m.macs(int(i)));
    const double fwd = std::max(flops / peak, bytes / bw) + kLaunchUs;
    // Backward: data and weight gradients double conv/linear work; others reread inputs.
    const double bwd = n.op == OpKind::conv2d || n.op == OpKind::linear
                           ? 2 * std::max(flops / peak, bytes / bw) + 2 * kLaunchUs
                           : 1.5 * bytes / bw + kLaunchUs;
    t[i] = {fwd, bwd};
    if (profile)
      if (auto it = profile->times.find(n.name); it != profile->times.end()) t[i] = it->second;
  }
  return t;
}

SegmentTimes tiled_segment_times(const TiledSegment& s, const std::vector<LayerTimes>& layers) {
  // Each layer does its work once per point it computes (halos counted again), and launches
  // once per tile.
  const sched::TileCost c = sched::tile_cost(s.problem, s.tiling);
  const double extra_launches = double(s.tiling.count() - 1) * kLaunchUs;
  SegmentTimes t;
  for (size_t j = 0; j < s.nodes.size(); ++j) {
    const double r = c.op_recompute[j];
    if (r == 0) continue;
    const LayerTimes& l = layers[size_t(s.nodes[j])];
    t.forward_us += l.forward_us * r + extra_launches;
    t.backward_us += (l.forward_us + l.backward_us) * r + 2 * extra_launches;
  }
  t.recompute_factor = c.recompute_factor;
  return t;
}

std::vector<double> op_times(const TrainingGraph& g, const std::vector<LayerTimes>& layers) {
  const Model& m = g.model();
  std::vector<double> times(g.ops().size(), 0);
  const SegmentTimes seg = g.tiled() ? tiled_segment_times(*g.tiled(), layers) : SegmentTimes{};
  for (size_t j = 0; j < g.ops().size(); ++j) {
    const TrainOp& op = g.ops()[j];
    switch (op.kind) {
    case TrainOp::forward: times[j] = layers[op.node].forward_us; break;
    case TrainOp::loss: times[j] = kLaunchUs; break;
    case TrainOp::gradient:
      // Each consumer's share of its backward that flows into this value.
      for (size_t c = 0; c < m.nodes.size(); ++c)
        for (int r : m.nodes[c].inputs)
          if (r == op.node) {
            const OpKind k = m.nodes[c].op;
            times[j] += k == OpKind::conv2d || k == OpKind::linear ? layers[c].backward_us / 2
                                                                   : layers[c].backward_us;
          }
      break;
    case TrainOp::tiled_forward: times[j] = seg.forward_us; break;
    case TrainOp::tiled_backward: times[j] = seg.backward_us; break;
    case TrainOp::param_grad: {
      const OpKind k = m.nodes[op.node].op;
      times[j] = k == OpKind::conv2d || k == OpKind::linear ? layers[op.node].backward_us / 2 : 0;
      break;
    }
    }
  }
  return times;
}

} // namespace kiln
