// A training plan's layout, priced whole (emit/training_layout.hpp), and its channels-last
// batchnorms over chunks of rows (rewrite/batchnorm_chunks.hpp): resnet50 in f16 on the H100
// at batch 32 trains channels-last with its forward convs on tensor cores; a small resnet18
// stays NCHW; a budgeted plan chunks nothing.
#include "generator/cost/rewrite_pays.hpp"
#include "generator/emit/generate.hpp"
#include "generator/gpu/gpu_desc.hpp"
#include "generator/model/overrides.hpp"
#include "generator/run/model_source.hpp"
#include "runtime/ops/batchnorm_chunks.hpp"

#include <doctest/doctest.h>
#include <set>

using namespace kiln;

namespace {

Generated train(const char* model, int64_t batch, int64_t image, const char* gpu,
                const std::string& schedule = "", const std::string& budget = "") {
  Model m = load_model_or_shipped(model);
  ModelOverrides o;
  o.dtype = DType::f16;
  o.batch = batch;
  if (image) o.image = Int2{image, image};
  apply_overrides(m, o);
  GenerateOptions go;
  go.train = true;
  go.schedule = schedule;
  go.budget = budget;
  return generate(m, load_gpu(gpu), go);
}

} // namespace

TEST_CASE("resnet50 trains channels-last on the H100: tensor-core forward convs, chunked "
          "batchnorms") {
  const Generated gen = train("resnet50", 32, 0, "h100");
  REQUIRE(gen.training_layout);
  const TrainingLayoutChoice& c = *gen.training_layout;
  MESSAGE("predicted step: nchw " << c.nchw_us << " us, nhwc " << c.nhwc_us << " us");
  CHECK(gen.layout == Layout::nhwc);
  CHECK(c.nhwc_us < c.nchw_us);
  CHECK(c.nhwc_library == 0);
  CHECK(gen.manifest["layout"] == "nhwc");
  CHECK(gen.manifest["training_layout"]["nhwc_us"].get<double>() < 0.9 * c.nchw_us);
  // Of the step's 106 batchnorms (53 forwards, 53 backwards), all but layer4's 7x7 ones go
  // over chunks (there 32 to 64 blocks of one step already fill most of the GPU), each
  // where it pays.
  CHECK(gen.batchnorm_chunks.size() == 98);
  for (const BatchnormChunksDecision& d : gen.batchnorm_chunks) {
    CAPTURE(d.node);
    CHECK(d.chunks >= 2);
    CHECK(rewrite_pays(d.one_step_us, d.chunked_us));
  }
  // Each chunked step reads the sums its batchnorm.partials wrote just before it, of its x
  // (and dy), into an fp32 [R, 2 or 4, C] transient.
  const Plan& p = gen.plan;
  int pairs = 0;
  std::set<std::string> families;
  for (const Phase& ph : p.phases)
    for (size_t i = 0; i < ph.steps.size(); ++i) {
      const Step& s = ph.steps[i];
      if (s.kind == StepKind::launch) families.insert(p.kernels[size_t(s.kernel)].name);
      if (s.arg("partial") < 0 || s.fn == Fn::batchnorm_partials) continue;
      CAPTURE(s.node);
      REQUIRE(i > 0);
      const Step& w = ph.steps[i - 1];
      CHECK(w.fn == Fn::batchnorm_partials);
      CHECK(w.need("partial") == s.need("partial"));
      CHECK(w.need("x") == s.need("x"));
      const bool backward = s.fn == Fn::batchnorm_backward;
      CHECK((w.arg("dy") >= 0) == backward);
      const Buffer& part = p.buffers[size_t(s.need("partial"))];
      CHECK(part.dtype == DType::f32);
      CHECK(part.role == BufferRole::activation);
      CHECK(part.shape[1] == bn_partial_sums(backward));
      CHECK(part.shape[2] == p.buffers[size_t(s.need("x"))].shape[1]);
      ++pairs;
    }
  CHECK(pairs == 98);
  // The forward convs on the Hopper family; the gradients' convs channels-last (no convert).
  int hopper = 0, nhwc_backward = 0, nchw_backward = 0;
  for (const std::string& k : families) {
    if (k.rfind("conv2d_hopper_wgmma", 0) == 0) ++hopper;
    if (k.rfind("conv2d_backward_", 0) == 0)
      ++(k.find("_nhwc_") != std::string::npos ? nhwc_backward : nchw_backward);
  }
  CHECK(hopper >= 15);
  CHECK(nhwc_backward >= 40);
  CHECK(nchw_backward == 1); // the stem's weight gradient reads the NCHW input
}

TEST_CASE("a small training step stays NCHW; a budgeted one chunks nothing") {
  const Generated small = train("resnet18", 2, 32, "h100");
  REQUIRE(small.training_layout);
  CHECK(small.layout == Layout::nchw);
  CHECK(small.training_layout->nchw_us <= small.training_layout->nhwc_us);
  CHECK(small.batchnorm_chunks.empty());
  const Generated budgeted = train("resnet50", 32, 0, "h100", "sqrt", "");
  CHECK(budgeted.batchnorm_chunks.empty());
  for (const Phase& ph : budgeted.plan.phases)
    for (const Step& s : ph.steps)
      CHECK(s.fn != Fn::batchnorm_partials);
}
