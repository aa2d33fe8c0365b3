// Selection with a tuning database: a measured winner other than the cost model's pick is
// chosen and the manifest says so; a winner that does not exist is ignored.
#include "generator/emit/generate.hpp"
#include "generator/tune/database.hpp"
#include "generator/tune/layer_spec.hpp"
#include "generator/tune/sweep.hpp"
#include "tune_test_util.hpp"

#include <doctest/doctest.h>

using namespace kiln;
using namespace kiln::test;

namespace {

struct Chosen {
  std::string variant, selected_by, reason;
};

Chosen chosen_for(const Generated& gen) {
  for (const auto& k : gen.manifest["kernels"])
    if (k["chosen"].get<bool>() &&
        k["nodes"][0].get<std::string>().find("conv2d.forward") != std::string::npos)
      return {k["name"], k["selected_by"], k["reason"]};
  return {};
}

} // namespace

TEST_CASE("selection prefers a measured winner over the cost model") {
  const GpuDesc g = load_gpu("h100");
  Model m = layer_spec_model("conv:n=2,c=16,h=12,w=12,k=16,r=3,p=1");
  GenerateOptions o;
  o.tuning_db = "none";
  const Generated plain = generate(m, g, o);
  const std::vector<WorkItem> items = sweep_work(plain.plan, plain.layout, g);
  REQUIRE(items.size() >= 2);
  const WorkItem* other = nullptr;
  for (const WorkItem& w : items)
    if (!w.model_choice && w.key.op == "conv2d.forward") other = &w;
  REQUIRE(other);
  CHECK(chosen_for(plain).selected_by == "model");
  CHECK(chosen_for(plain).variant != other->variant.name);

  const std::string dir = temp_dir();
  TuningDb db = empty_tuning_db(g, "gpu");
  Measurement win = measurement(other->key.id, other->variant.name, 0.01, other->variant.family);
  db.add(win);
  for (const WorkItem& w : items) // every other variant measured slower
    if (&w != other) db.add(measurement(w.key.id, w.variant.name, 0.05, w.variant.family));
  save_tuning_db(db, dir + "/db.json");
  o.tuning_db = dir + "/db.json";
  const Chosen tuned = chosen_for(generate(m, g, o));
  CHECK(tuned.variant == other->variant.name);
  CHECK(tuned.selected_by == "measurement");
  CHECK(tuned.reason.find("measured") != std::string::npos);

  // A winner that no family offers is ignored: the cost model decides. (Measured as its
  // prediction, 10 us: the family's calibration factor stays 1, so only the winner's name is
  // under test; a faster measurement would rightly make the model prefer that family.)
  TuningDb stale = empty_tuning_db(g, "gpu");
  stale.add(measurement(other->key.id, "conv2d_direct_no_such_variant", 0.01));
  save_tuning_db(stale, dir + "/stale.json");
  o.tuning_db = dir + "/stale.json";
  const Chosen fallback = chosen_for(generate(m, g, o));
  CHECK(fallback.variant == chosen_for(plain).variant);
  CHECK(fallback.selected_by == "model");

  // A corrupt database: ignored, the same kernels as without one.
  write(dir + "/corrupt.json", "{\"format\": \"kiln-tuning/1\", \"measurements\": [");
  o.tuning_db = dir + "/corrupt.json";
  CHECK(chosen_for(generate(m, g, o)).variant == chosen_for(plain).variant);
  std::filesystem::remove_all(dir);
}

TEST_CASE("sweep work: one item per (shape, variant), sorted, repeated shapes merged") {
  const GpuDesc g = load_gpu("h100");
  Model m = layer_spec_model("conv:n=1,c=8,h=8,w=8,k=8,r=3,p=1");
  GenerateOptions o;
  o.tuning_db = "none";
  o.all_variants = true;
  const Generated gen = generate(m, g, o);
  const auto items = sweep_work(gen.plan, gen.layout, g);
  REQUIRE(!items.empty());
  int choices = 0;
  for (size_t i = 1; i < items.size(); ++i)
    CHECK(std::tie(items[i - 1].key.id, items[i - 1].variant.name) <
          std::tie(items[i].key.id, items[i].variant.name));
  for (const WorkItem& w : items)
    choices += w.model_choice;
  CHECK(choices == 1); // one shape
  CHECK(sweep_work(gen.plan, gen.layout, g, false).size() == 1);
}
