// Plans the rewrite tests build by hand and run on the cpu backend: a one-step f64 plan, the
// same plan with its step replaced by a rewrite's steps, a network's forward pass, and the
// relative error between two outputs.
#pragma once

#include "runtime/cpu/backend.hpp"
#include "runtime/executor.hpp"
#include "runtime/plan.hpp"
#include "runtime/weights.hpp"

#include <cmath>
#include <vector>

namespace kiln::test {

// A training plan's backward phase built by hand for a rewrite's tests: buffers by name and
// shape, then launch steps over them, each argument a role and a buffer's name.
struct HandBackward {
  Plan p;
  explicit HandBackward(const std::vector<std::pair<const char*, Shape>>& buffers) {
    p.train = true;
    for (const auto& [name, shape] : buffers) {
      Buffer b;
      b.name = name;
      b.shape = shape;
      p.buffers.push_back(b);
    }
    p.phases.push_back(Phase{"backward", {}});
  }
  int id(const std::string& n) const { return p.find_buffer(n); }
  std::vector<Step>& steps() { return p.phases[0].steps; }
  const std::vector<Step>& steps() const { return p.phases[0].steps; }
  void step(Fn fn, const char* node, const std::vector<std::pair<const char*, const char*>>& args) {
    Step s;
    s.kind = StepKind::launch;
    s.fn = fn;
    s.node = node;
    for (auto [role, buf] : args)
      s.args.push_back({role, id(buf)});
    steps().push_back(s);
  }
};

// A one-step f64 plan: step s over buffers named and shaped as given, the third its output
// and the others inputs, bound to the step by their names.
inline Plan one_step_plan(Step s, const std::vector<const char*>& names,
                          const std::vector<Shape>& shapes, const char* model) {
  Plan p;
  p.model = model;
  p.dtype = DType::f64;
  s.kind = StepKind::reference;
  s.params = default_params(s.fn);
  for (size_t i = 0; i < names.size(); ++i) {
    Buffer b;
    b.name = names[i];
    b.shape = shapes[i];
    b.dtype = DType::f64;
    b.offset = p.arena_bytes;
    b.role = i == 2 ? BufferRole::output : BufferRole::input;
    p.arena_bytes += (b.bytes() + 255) / 256 * 256;
    p.buffers.push_back(b);
    (i == 2 ? p.outputs : p.inputs).push_back(int(i));
    s.args.push_back({names[i], int(i)});
  }
  p.phases.push_back(Phase{"forward", {s}});
  validate_plan(p);
  return p;
}

// The plan with its one step replaced by `steps` (reference steps over `buffers`, laid out
// after the others).
inline Plan with_steps(const Plan& g, const std::vector<Buffer>& buffers,
                       const std::vector<Step>& steps) {
  Plan p = g;
  for (Buffer b : buffers) {
    b.offset = p.arena_bytes;
    p.arena_bytes += (b.bytes() + 255) / 256 * 256;
    p.buffers.push_back(b);
  }
  p.phases[0].steps = steps;
  for (Step& s : p.phases[0].steps)
    s.kind = StepKind::reference;
  validate_plan(p);
  return p;
}

// A network's output on the cpu backend: seeded weights, a fixed input, prepare then forward.
inline Tensor forward_on_cpu(const Plan& p) {
  cpu::CpuBackend backend;
  Executor ex(p, backend);
  bind_seeded_weights(ex, p, 5);
  const Buffer& in = p.buffers[size_t(p.inputs[0])];
  Tensor x(in.dtype, in.shape);
  for (int64_t i = 0; i < x.numel(); ++i)
    x.set(i, std::sin(0.37 * double(i)) + 0.1);
  ex.write(p.inputs[0], x);
  if (p.phase("prepare")) ex.run("prepare");
  ex.run("forward");
  return ex.read(p.outputs[0]);
}

// ||got - want|| / ||want|| over every element (the same count in both).
inline double relative_l2(const Tensor& want, const Tensor& got) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double d = got.get(i) - want.get(i);
    num += d * d;
    den += want.get(i) * want.get(i);
  }
  return std::sqrt(num / den);
}

// The largest absolute difference, element by element.
inline double worst_difference(const Tensor& want, const Tensor& got) {
  double worst = 0;
  for (int64_t i = 0; i < want.numel(); ++i)
    worst = std::max(worst, std::abs(want.get(i) - got.get(i)));
  return worst;
}

} // namespace kiln::test
