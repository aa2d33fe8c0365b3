// The one factory of plan steps and parameter buffers that every lowering (inference,
// training, tiles) and every plan rewrite uses: steps are born `reference` steps (kernel
// choice refines them later) and carry their graph node's name, op and attributes.
#pragma once

#include "generator/lower/plan_builder.hpp"
#include "generator/model/model.hpp"
#include "runtime/plan.hpp"

#include <map>
#include <string>
#include <vector>

namespace kiln {

// A step computing `fn` for a model node.
Step node_step(const Node& n, Fn fn, std::vector<Arg> args);
// A step of the same node as `of` (a rewrite completing or replacing it), with no arguments
// beyond `args` and none of `of`'s step parameters (each step starts with its function's
// default parameters).
Step step_like(const Step& of, Fn fn, std::vector<Arg> args = {});
// A step of no model node (copies, the loss, updates); `label` names it in messages.
Step plain_step(Fn fn, std::string label, std::vector<Arg> args);

// Buffer names: the model input, node activations and gradients, parameters.
std::string input_buffer_name(const Model& m);
std::string act_name(const std::string& node);
std::string dact_name(const std::string& node);
std::string param_buffer_name(const std::string& param);
std::string grad_buffer_name(const std::string& param);

// A node's parameters as plan buffers (param, or state for running statistics) with their
// bindings and seeded initialisation ranges, gradient buffers for the trainable ones when
// `trained`; records "<layer>.<suffix>" -> index into plan.params in `index`.
using ParamIndex = std::map<std::string, int>;
void bind_node_params(PlanBuilder& b, const Model& m, int node, bool trained, ParamIndex& index);

} // namespace kiln
