#include "generator/rewrite/batchnorm_chunks.hpp"

#include "generator/cost/rewrite_pays.hpp"
#include "generator/rewrite/fresh_name.hpp"
#include "generator/rewrite/us_json.hpp"
#include "generator/select/select.hpp"
#include "runtime/ops/batchnorm_chunks.hpp"

#include <cmath>

namespace kiln {

namespace {

// Fewest rows a chunk keeps: its sums stay a small share of the traffic (at most 4 floats
// per channel against 256 elements).
constexpr int64_t kMinChunkRows = 256;
constexpr int64_t kMaxChunks = 1024;

bool eligible(const Plan& p, const Step& s) {
  if ((s.fn != Fn::batchnorm_forward_train && s.fn != Fn::batchnorm_backward) ||
      s.kind == StepKind::free || s.arg("partial") >= 0 ||
      (s.fn == Fn::batchnorm_backward && s.arg("mean") >= 0))
    return false;
  const Buffer& x = p.buffers[s.need("x")];
  return x.shape.size() == 2 || (x.shape.size() == 4 && x.layout == Layout::nhwc);
}

struct Chunked {
  Buffer partial;
  Step partials, step;
};

// Step s reading the sums of `chunks` chunks; the workspace goes at the end of p.buffers.
Chunked make_chunked(const Plan& p, const Step& s, int64_t chunks) {
  const bool backward = s.fn == Fn::batchnorm_backward;
  const Buffer& x = p.buffers[s.need("x")];
  Chunked c;
  c.partial.name = fresh_buffer_name(p, x.name + ".bn_partial");
  c.partial.shape = {chunks, bn_partial_sums(backward), x.shape[1]};
  c.partial.dtype = DType::f32;
  c.partial.role = BufferRole::activation;
  const int partial = int(p.buffers.size());
  c.partials.kind = StepKind::launch;
  c.partials.fn = Fn::batchnorm_partials;
  c.partials.params = default_params(Fn::batchnorm_partials);
  c.partials.node = s.node;
  c.partials.op = s.op;
  c.partials.attrs = s.attrs;
  c.partials.args = {{"x", s.need("x")}};
  if (backward) c.partials.args.push_back({"dy", s.need("dy")});
  c.partials.args.push_back({"partial", partial});
  c.step = s;
  c.step.args.push_back({"partial", partial});
  return c;
}

double chunked_us(Plan& p, const Step& s, int64_t chunks, const GpuDesc& g) {
  Chunked c = make_chunked(p, s, chunks);
  p.buffers.push_back(c.partial); // visible to the families while costed
  const double us = kernel_estimate_us({p, c.partials, g}) + kernel_estimate_us({p, c.step, g});
  p.buffers.pop_back();
  return us;
}

} // namespace

std::vector<BatchnormChunksDecision> plan_batchnorm_chunks(Plan& p, const GpuDesc& g) {
  std::vector<BatchnormChunksDecision> out;
  for (Phase& ph : p.phases)
    for (size_t i = 0; i < ph.steps.size(); ++i) {
      if (!eligible(p, ph.steps[i])) continue;
      const Shape& x = p.buffers[ph.steps[i].need("x")].shape;
      const int64_t rows = numel(x) / x[1];
      BatchnormChunksDecision d;
      d.node = ph.steps[i].node;
      d.one_step_us = kernel_estimate_us({p, ph.steps[i], g});
      d.chunked_us = INFINITY;
      for (int64_t r = 2; r <= kMaxChunks && rows / r >= kMinChunkRows; r *= 2)
        if (const double us = chunked_us(p, ph.steps[i], r, g); us < d.chunked_us)
          d.chunked_us = us, d.chunks = r;
      if (!std::isfinite(d.chunked_us) ||
          (std::isfinite(d.one_step_us) && !rewrite_pays(d.one_step_us, d.chunked_us)))
        continue;
      Chunked c = make_chunked(p, ph.steps[i], d.chunks);
      p.buffers.push_back(std::move(c.partial));
      ph.steps[i] = std::move(c.step);
      ph.steps.insert(ph.steps.begin() + long(i), std::move(c.partials));
      ++i;
      out.push_back(d);
    }
  return out;
}

nlohmann::ordered_json batchnorm_chunks_json(const BatchnormChunksDecision& d) {
  return {{"node", d.node},
          {"chunks", d.chunks},
          {"one_step_us", us_json(d.one_step_us)},
          {"chunked_us", us_json(d.chunked_us)}};
}

} // namespace kiln
