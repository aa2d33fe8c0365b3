#include "generator/tune/device_timing.hpp"

#include "runtime/error.hpp"
#include "runtime/param_init.hpp"
#include "runtime/step_timer.hpp"

#include <algorithm>
#include <map>

namespace kiln {

int rotation_copies(int64_t arena_bytes, const TimingOptions& o) {
  const int64_t bytes = std::max<int64_t>(arena_bytes, 1);
  const int64_t want = 2 * o.l2_bytes / bytes + 2; // together over twice the L2
  const int64_t fit = std::max<int64_t>(o.max_bytes / bytes, 1);
  return int(std::clamp<int64_t>(std::min(want, fit), 1, 256));
}

Plan rotated_plan(const Plan& single, int copies) {
  // One step, after a prepare phase of its kernel's tensor maps where it has one.
  const Phase* fwd = single.phase("forward");
  const Phase* prep = single.phase("prepare");
  if (!fwd || fwd->steps.size() != 1 || single.phases.size() != (prep ? 2u : 1u))
    throw Error("", "timing", "expects a plan of one step");
  Plan r = single;
  r.buffers.clear();
  r.inputs.clear();
  r.outputs.clear();
  r.params.clear();
  r.target = r.loss = -1;
  r.phases.clear();
  if (prep) r.phases.push_back(Phase{"prepare", {}});
  r.phases.push_back(Phase{"forward", {}});
  const int64_t stride = (single.arena_bytes + 255) / 256 * 256;
  for (int c = 0; c < copies; ++c) {
    const int base = int(r.buffers.size());
    const std::string suffix = "#" + std::to_string(c);
    for (Buffer b : single.buffers) {
      b.name += suffix;
      b.offset += stride * c;
      if (b.view_of >= 0) b.view_of += base;
      r.buffers.push_back(b);
    }
    for (int i : single.inputs)
      r.inputs.push_back(base + i);
    for (int o : single.outputs)
      r.outputs.push_back(base + o);
    if (prep)
      for (Step e : prep->steps) { // each copy's maps describe that copy's buffers
        for (Arg& a : e.args)
          a.buffer += base;
        if (e.fn == Fn::tensor_map_encode) e.tensor_map().buffer += suffix;
        r.phases.front().steps.push_back(e);
      }
    Step s = fwd->steps[0];
    for (Arg& a : s.args)
      a.buffer += base;
    r.phases.back().steps.push_back(s);
  }
  r.arena_bytes = stride * copies;
  validate_plan(r);
  return r;
}

DeviceTiming time_rotated(const Plan& single, Backend& backend, const TimingOptions& o) {
  if (o.runs < 20) throw Error("", "--runs", "the median needs at least 20 timed runs");
  const int copies = rotation_copies(single.arena_bytes, o);
  const Plan r = rotated_plan(single, copies);
  backend.prepare(r);
  // Random inputs (the values were checked before; here they only must not be special).
  std::map<size_t, Tensor> data;
  uint64_t st = 0x7157;
  for (size_t i = 0; i < single.buffers.size(); ++i) {
    const Buffer& b = single.buffers[i];
    if (b.role == BufferRole::derived) continue; // tensor maps: encoded when bound (prepare)
    Tensor t(b.dtype, b.shape);
    if (is_float(b.dtype))
      for (int64_t e = 0; e < t.numel(); ++e)
        t.set(e, double(splitmix64(st) >> 11) * 0x1.0p-52 - 1);
    data.emplace(i, std::move(t));
  }
  for (int c = 0; c < copies; ++c)
    for (auto& [i, t] : data)
      backend.upload(int(i + single.buffers.size() * size_t(c)), t);
  // The cuda backend encoded the tensor maps of the prepare phase when it was prepared.
  // A timed run is the phase, every copy once, back to back: under CUDA graphs (the cuda
  // backend's phases) no host work of a launch or a cuDNN call is timed, only the device's.
  const Phase& phase = *r.phase("forward");
  const int warmup = std::max(2, (o.warmup + copies - 1) / copies); // the first captures
  const StepTimes t = time_steps(backend, warmup, o.runs, [&] {
    backend.begin_phase(phase);
    for (const Step& s : phase.steps)
      backend.run(s);
    backend.end_phase(phase);
  });
  return {t.median() / copies, int(t.ms.size())};
}

} // namespace kiln
