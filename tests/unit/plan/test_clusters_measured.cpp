// Thread-block clusters are chosen by measurement only (Variant::measured_only): the H100
// ran resnet50 f16 slower with the clusters the cost model chose (bench/results/
// h100_2026-11-27). Even with the L2 ceiling that favours them (l2_bytes_per_clock 32, which
// no shipped descriptor sets any more), no plan takes one, and the manifest's reason says how
// many were left to measurement; a tuning database's winner still brings one in.
#include "generator/emit/generate.hpp"
#include "generator/gpu/gpu_desc.hpp"
#include "generator/model/overrides.hpp"
#include "generator/run/model_source.hpp"
#include "generator/select/families/hopper/tensor_map_binding.hpp"
#include "generator/select/hints.hpp"
#include "generator/select/select.hpp"

#include <doctest/doctest.h>

using namespace kiln;

namespace {

// A database that measured one variant fastest, whatever the step.
class OneWinner final : public SelectionHints {
public:
  explicit OneWinner(std::string w) : winner_(std::move(w)) {}
  std::string measured_winner(const StepInfo&) const override { return winner_; }
  void winner_ignored(const StepInfo&, const std::string&, const std::string&) const override {}
  double correction(std::string_view) const override { return 1; }
  std::string measured_reason(const StepInfo&, const std::string& v) const override {
    return "measured: " + v;
  }

private:
  std::string winner_;
};

} // namespace

TEST_CASE("clusters: chosen by a measurement, never by the cost model alone") {
  Model m = load_model_or_shipped("resnet50");
  ModelOverrides o;
  o.dtype = DType::f16;
  o.batch = 32;
  apply_overrides(m, o);
  GpuDesc h100 = load_gpu("h100");
  CHECK(h100.l2_bytes_per_clock == 0);
  h100.l2_bytes_per_clock = 32; // the ceiling under which clusters price cheapest
  GenerateOptions go;
  go.tuning_db = "none";
  const Generated gen = generate(m, h100, go);
  int hopper = 0, left_to_measurement = 0;
  for (const Kernel& k : gen.plan.kernels) {
    CHECK_MESSAGE(!k.clustered(), k.name);
    hopper += k.name.find("hopper_wgmma") != std::string::npos;
  }
  for (const auto& k : gen.manifest["kernels"])
    left_to_measurement +=
        k["reason"].get<std::string>().find("chosen only when measured") != std::string::npos;
  CHECK(hopper >= 10);
  CHECK(left_to_measurement >= 10);

  // A step that offers a cluster, and a database naming that cluster its winner.
  for (const Phase& ph : gen.plan.phases)
    for (const Step& full : ph.steps) {
      if (full.fn != Fn::conv2d_forward) continue;
      // The step as selection saw it (a chosen Hopper kernel's tensor maps are no part of it).
      const Step s = without_tensor_maps(gen.plan, full);
      const StepInfo info{gen.plan, s, h100};
      const Choice plain = select_variant(info);
      const auto cl = std::find_if(plain.valid.begin(), plain.valid.end(), [](const Candidate& c) {
        return !c.variant.measured_only.empty() && c.variant.cluster[0] > 1;
      });
      if (cl == plain.valid.end()) continue;
      REQUIRE(plain.kernel);
      CHECK(plain.kernel->variant.measured_only.empty());
      CHECK(!plain.measured);
      const OneWinner db(cl->variant.name);
      const Choice tuned = select_variant(info, true, &db);
      REQUIRE(tuned.kernel);
      CHECK(tuned.measured);
      CHECK(tuned.kernel->variant.name == cl->variant.name);
      CHECK(tuned.kernel->variant.cluster[0] > 1);
      return;
    }
  FAIL("no conv step offers a cluster");
}
