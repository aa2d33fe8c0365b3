// A squeeze-excite gate fused into the conv that reads the gated activation
// (generator/rewrite/gates.cpp): where it is fused, where it is refused, and that the fused
// step is served only by a variant that reads the gate.
#include "generator/cost/rewrite_pays.hpp"
#include "generator/emit/generate.hpp"
#include "generator/gpu/gpu_desc.hpp"
#include "generator/model/model_json.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

using namespace kiln;

namespace {

// conv, the squeeze (mean, reduce, expand, sigmoid), the gate, then `consumer` reading the
// gated activation (and `also` a second reader of it, when not empty).
Model se_block(const std::string& dtype, int batch, const std::string& consumer,
               const std::string& also = "") {
  const std::string text = fmt::format(R"({{
  "format": "kiln-model/1", "name": "se", "dtype": "{}",
  "input": {{"name": "image", "shape": [{}, 32, 28, 28]}},
  "layers": [
    {{"name": "expand", "op": "conv2d", "out_channels": 96, "kernel": 1, "bias": false}},
    {{"name": "act", "op": "silu"}},
    {{"name": "squeeze", "op": "global_avgpool"}},
    {{"name": "reduce", "op": "conv2d", "out_channels": 8, "kernel": 1}},
    {{"name": "reduce_act", "op": "silu"}},
    {{"name": "excite", "op": "conv2d", "out_channels": 96, "kernel": 1}},
    {{"name": "gate", "op": "sigmoid"}},
    {{"name": "scale", "op": "mul", "inputs": ["act", "gate"]}},
    {}{}
  ],
  "outputs": ["project"{}]
}})",
                                       dtype, batch, consumer, also.empty() ? "" : ",\n    " + also,
                                       also.empty() ? "" : ", \"other\"");
  return parse_model(text, "se.json");
}

const std::string kProject =
    R"({"name": "project", "op": "conv2d", "out_channels": 32, "kernel": 1, "bias": false})";

const Step* step_of(const Plan& p, const std::string& node_part, Fn fn) {
  for (const Phase& ph : p.phases)
    for (const Step& s : ph.steps)
      if (s.fn == fn && s.node.find(node_part) != std::string::npos) return &s;
  return nullptr;
}

} // namespace

TEST_CASE("a squeeze-excite gate is fused into its projection conv where the model says it pays") {
  for (const char* dtype : {"f16", "f32"})
    for (int batch : {1, 32}) {
      CAPTURE(dtype);
      CAPTURE(batch);
      const Generated gen = generate(se_block(dtype, batch, kProject), load_gpu("h100"), {});
      REQUIRE(gen.gates.size() == 1);
      const GateDecision& d = gen.gates[0];
      CHECK(d.node == "scale+project");
      CHECK(rewrite_pays(d.separate_us, d.fused_us));
      // No mul left; the projection reads the activation and the gate.
      CHECK(step_of(gen.plan, "scale", Fn::mul_forward) == nullptr);
      const Step* conv = step_of(gen.plan, "project", Fn::conv2d_forward);
      if (!conv) conv = step_of(gen.plan, "project", Fn::conv2d_forward_split);
      if (!conv) conv = step_of(gen.plan, "project", Fn::conv2d_forward_partial);
      REQUIRE(conv);
      CHECK(conv->arg("gate") >= 0);
      CHECK(gen.plan.buffers[conv->need("gate")].shape == Shape{batch, 96, 1, 1});
      // Its kernel reads the gate.
      bool found = false;
      for (const KernelRecord& r : gen.assigned.kernels)
        if (r.chosen && r.variant.name == gen.plan.kernels[size_t(conv->kernel)].name) {
          found = true;
          CHECK(r.variant.family == "conv2d_implicit_gemm");
          CHECK(r.variant.args.back() == "gate");
        }
      CHECK(found);
      CHECK(gen.manifest.contains("gates"));
    }
}

TEST_CASE("a gate is not fused where no gate-reading kernel serves, nor where the activation has "
          "another reader, nor in training, nor in the cuDNN plan") {
  const GpuDesc h100 = load_gpu("h100");
  // A depthwise consumer: no family reads a gate for it.
  const std::string depthwise =
      R"({"name": "project", "op": "conv2d", "out_channels": 96, "kernel": 3, "padding": 1, "groups": 96})";
  CHECK(generate(se_block("f16", 8, depthwise), h100, {}).gates.empty());
  // The gated activation also read by a second layer.
  const std::string other = R"({"name": "other", "op": "relu", "inputs": ["scale"]})";
  CHECK(generate(se_block("f16", 8, kProject, other), h100, {}).gates.empty());
  // Training: the backward pass reads the gated activation.
  GenerateOptions train;
  train.train = true;
  CHECK(generate(se_block("f32", 8, kProject), h100, train).gates.empty());
  // The cuDNN peer plan keeps the mul (no cuDNN call scales a conv's input).
  GenerateOptions cudnn;
  cudnn.cudnn_only = true;
  CHECK(generate(se_block("f16", 8, kProject), h100, cudnn).gates.empty());
  // f32 on a T4 has no tensor-core implicit GEMM: nothing reads a gate there.
  CHECK(generate(se_block("f32", 8, kProject), load_gpu("t4"), {}).gates.empty());
}
