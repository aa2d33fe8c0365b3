#include "generator/run/device_plan.hpp"

#include "generator/lower/lower.hpp"
#include "generator/lower/plan_builder.hpp"
#include "generator/rewrite/channel_views.hpp"
#include "generator/run/generated_run.hpp"
#include "runtime/cpu/backend.hpp"
#include "runtime/io/file.hpp"
#include "runtime/json_util.hpp"

namespace kiln {

bool is_scheduled(const GenerateOptions& o) {
  return o.schedule == "tiled" ||
         (o.train && ((!o.schedule.empty() && o.schedule != "store-all") || !o.budget.empty()));
}

namespace {

std::string strategy_of(const GenerateOptions& o) {
  return o.schedule.empty() ? "store-all" : o.schedule;
}

// The reference ops on the cpu, scheduled as the options ask.
DevicePlan cpu_plan(const Model& m, const DevicePlanOptions& o) {
  const GenerateOptions& go = o.generate;
  LowerOptions lo;
  lo.train = go.train;
  lo.lr = go.lr;
  lo.recipe = go.recipe;
  DevicePlan d;
  d.backend = std::make_unique<cpu::CpuBackend>();
  if (!is_scheduled(go)) { // channel copies as views, as generate makes them
    Plan p = lower_model_steps(m, lo);
    plan_channel_views(p);
    d.plan = finish_plan(std::move(p));
    return d;
  }
  ScheduledSteps s = schedule_steps(m, o.gpu, lo, schedule_request(go));
  d.plan = finish_plan(std::move(s.steps));
  d.schedule = s.choice;
  return d;
}

} // namespace

DevicePlan make_device_plan(const Model& m, const DevicePlanOptions& o) {
  if (o.device == "cpu") return cpu_plan(m, o);
  GenerateOptions go = o.generate;
  const bool scheduled = is_scheduled(go);
  if (!scheduled) { // the same generated directory as a plan made without any schedule option
    const GenerateOptions plain;
    go.schedule = plain.schedule, go.budget = plain.budget, go.tiles = plain.tiles;
    go.slots = plain.slots;
  }
  GeneratedRun gr = prepare_generated(m, o.gpu, go, o.device, o.progress);
  DevicePlan d;
  d.plan = std::move(gr.plan);
  d.backend = std::move(gr.backend);
  if (scheduled) {
    // What the generator chose, from the manifest.
    const auto bytes = io::read_file(gr.dir + "/manifest.json");
    const nlohmann::json man =
        json_util::parse(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                         gr.dir + "/manifest.json");
    const nlohmann::json sc = man.value("schedule", nlohmann::json::object());
    ScheduleChoice c;
    c.strategy = strategy_of(go);
    c.budget = go.budget;
    if (sc.contains("tiles")) {
      c.tiles = sc["tiles"].get<std::string>();
      c.segment = sc.value("segment", std::string("the segment"));
    }
    if (sc.contains("rest")) c.rest = sc["rest"].get<std::string>();
    d.schedule = c;
  }
  return d;
}

} // namespace kiln
