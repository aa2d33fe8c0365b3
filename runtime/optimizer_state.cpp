#include "runtime/optimizer_state.hpp"

#include "runtime/error.hpp"

#include <set>

namespace kiln {

namespace {

bool is_state(const Buffer& b) { return b.role == BufferRole::optimizer_state && b.view_of < 0; }
bool is_count(const Buffer& b) { return b.name == kOptimizerStepBuffer; }

} // namespace

void zero_optimizer_state(Executor& ex, const Plan& plan) {
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const Buffer& b = plan.buffers[i];
    if (is_state(b)) ex.write(int(i), Tensor(b.dtype, b.shape)); // Tensor() is zero-filled
  }
}

std::map<std::string, Tensor> read_optimizer_state(Executor& ex, const Plan& plan) {
  std::map<std::string, Tensor> r;
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const Buffer& b = plan.buffers[i];
    if (is_state(b) && !is_count(b)) r[b.name] = ex.read(int(i));
  }
  return r;
}

void write_optimizer_state(Executor& ex, const Plan& plan,
                           const std::map<std::string, Tensor>& state, const std::string& file) {
  std::set<std::string> wanted;
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const Buffer& b = plan.buffers[i];
    if (!is_state(b) || is_count(b)) continue;
    wanted.insert(b.name);
    auto it = state.find(b.name);
    if (it == state.end())
      throw Error(file, b.name,
                  cat("missing: the optimizer needs this state with shape ", shape_str(b.shape)));
    if (!is_float(it->second.dtype()) || it->second.shape() != b.shape)
      throw Error(file, b.name,
                  cat("has dtype ", dtype_name(it->second.dtype()), " and shape ",
                      shape_str(it->second.shape()), ", the optimizer needs floats of shape ",
                      shape_str(b.shape)));
    ex.write(int(i), it->second);
  }
  for (const auto& [name, t] : state)
    if (!wanted.count(name))
      throw Error(file, name, "unexpected: the optimizer has no state of that name");
}

void set_optimizer_step(Executor& ex, const Plan& plan, int64_t step) {
  const int b = plan.find_buffer(kOptimizerStepBuffer);
  if (b < 0) return;
  if (step < 1 || step >= (int64_t(1) << 31))
    throw Error("", "optimizer step", cat("the step count ", step, " is outside [1, 2^31)"));
  Tensor t(DType::i32, {1});
  t.set(0, double(step));
  ex.write(b, t);
}

} // namespace kiln
