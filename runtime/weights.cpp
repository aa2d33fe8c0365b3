#include "runtime/weights.hpp"

#include "runtime/error.hpp"
#include "runtime/param_init.hpp"

#include <set>

namespace kiln {

void bind_weights(Executor& ex, const Plan& plan, const std::map<std::string, Tensor>& weights,
                  const std::string& file) {
  std::set<std::string> wanted;
  for (const ParamBinding& p : plan.params) {
    wanted.insert(p.name);
    auto it = weights.find(p.name);
    if (it == weights.end())
      throw Error(file, p.name, cat("missing: the model needs this tensor with shape ",
                                    shape_str(plan.buffers[p.buffer].shape)));
    const Tensor& t = it->second;
    if (!is_float(t.dtype()))
      throw Error(file, p.name, cat("has dtype ", dtype_name(t.dtype()), "; parameters are floats"));
    if (t.shape() != plan.buffers[p.buffer].shape)
      throw Error(file, p.name, cat("has shape ", shape_str(t.shape()), ", the model needs ",
                                    shape_str(plan.buffers[p.buffer].shape)));
    ex.write(p.buffer, t);
  }
  for (const auto& [name, t] : weights)
    if (!wanted.count(name) && !name.ends_with(".num_batches_tracked"))
      throw Error(file, name, "unexpected: the model has no parameter of that name");
}

void bind_seeded_weights(Executor& ex, const Plan& plan, uint64_t seed) {
  for (const ParamBinding& p : plan.params) ex.write(p.buffer, init_param(plan, p, seed));
}

std::map<std::string, Tensor> collect_grads(Executor& ex, const Plan& plan) {
  std::map<std::string, Tensor> grads;
  for (const ParamBinding& p : plan.params) {
    if (plan.buffers[p.buffer].role != BufferRole::param) continue;
    if (p.grad >= 0) grads[p.name] = ex.read(p.grad);
    else grads[p.name] = Tensor(plan.buffers[p.buffer].dtype, plan.buffers[p.buffer].shape);
  }
  return grads;
}

} // namespace kiln
