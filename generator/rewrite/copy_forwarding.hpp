// Copies whose destination only later steps read, unchanged: they read the source instead
// and the copy goes. In a training step this is add's backward into an input that also
// feeds a conv: dy was copied into that input's gradient, which the conv's data gradient then
// read as its residual into a new buffer (backward_data_as_conv.hpp); resnet50 has 12 such
// copies of its 16 adds' gradients, 0.27 ms of a b32 step on the H100 of 2026-11-27c (the
// other inputs' gradients are views of dy: training_graph.cpp). Training plans, not under a
// memory budget (the source lives on to the last reader: the schedule planned the copy).
#pragma once

#include "runtime/plan.hpp"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kiln {

struct ForwardedCopy {
  std::string node;           // the copy's step's node (an add)
  std::string source, target; // buffers: what the readers of target now read
  int readers = 0;
};

std::vector<ForwardedCopy> forward_copies(Plan& p);
nlohmann::ordered_json forwarded_copy_json(const ForwardedCopy& c);

} // namespace kiln
