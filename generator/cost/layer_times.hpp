// How long each layer takes, forward and backward, for the schedules: the roofline of the
// layer's FLOPs on the unit its kernels use and of the bytes it reads and writes
// (cost/roofline.hpp), plus launches; or measured times from a profile
// (generator/model/profile.hpp: its "nodes"; layers it does not name keep their estimate).
#pragma once

#include "generator/gpu/gpu_desc.hpp"
#include "generator/model/model.hpp"
#include "generator/model/profile.hpp"

#include <vector>

namespace kiln {

std::vector<LayerTimes> layer_times(const Model& m, const GpuDesc& g,
                                    const Profile* profile = nullptr);

} // namespace kiln
