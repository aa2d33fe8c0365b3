#include "generator/cost/layer_times.hpp"

#include "generator/cost/roofline.hpp"

#include <algorithm>

namespace kiln {

std::vector<LayerTimes> layer_times(const Model& m, const GpuDesc& g, const Profile* profile) {
  std::vector<LayerTimes> t(m.nodes.size());
  const double esize = double(dtype_size(m.dtype));
  const Math math = layer_math(m.dtype, g);
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
    const Roofline r = roofline(g, flops, bytes, math);
    const double fwd = r.floor_us() + kLaunchUs;
    // Backward: data and weight gradients double the work of the ops whose work is MACs
    // (conv2d, linear; on CUDA cores: kiln's backward kernels compute in fp32); others reread
    // their inputs.
    const double bwd = m.macs(int(i)) > 0
                           ? 2 * roofline(g, flops, bytes, Math::fp32).floor_us() + 2 * kLaunchUs
                           : 1.5 * r.memory_us + kLaunchUs;
    t[i] = {fwd, bwd};
    if (profile)
      if (auto it = profile->times.find(n.name); it != profile->times.end()) t[i] = it->second;
  }
  return t;
}

} // namespace kiln
