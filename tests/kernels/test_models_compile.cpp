// Every example model generates for a T4 (sm_75), an A100 (sm_80) and an H200 (sm_90):
// deterministically, with a plan the runtime's loader accepts, and every distinct kernel
// compiles with NVRTC without spilling where its variant promises none (once per compile_class).
#include "generator/compile/nvrtc.hpp"
#include "generator/emit/generate.hpp"
#include "generator/model/model_json.hpp"
#include "runtime/plan.hpp"
#include "tests/kernels/harness.hpp"

#include <atomic>
#include <doctest/doctest.h>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

using namespace kiln;

namespace {

const char* models[] = {"resnet18", "resnet50", "resnet152", "vgg16", "densenet121", "densenet201",
                        "resnet32", "resnet1202", "unet", "noscope_coral", "noscope_roundabout"};

} // namespace

TEST_CASE("every example model generates and every kernel compiles with NVRTC for sm_75, sm_80 and sm_90") {
  struct Job {
    std::string name, source, arch;
    bool no_spills;
  };
  std::map<std::string, Job> jobs; // compile_class -> job
  for (const char* gpu : {"t4", "a100", "h200"}) {
    const GpuDesc g = load_gpu(gpu);
    for (const char* name : models) {
      INFO(name << " on " << gpu);
      const Model m = load_model(std::string(KILN_SOURCE_ROOT "/models/") + name + ".json");
      const Generated gen = generate(m, g, {});
      const Generated again = generate(m, g, {});
      REQUIRE(gen.files.size() == again.files.size());
      for (size_t i = 0; i < gen.files.size(); ++i) CHECK(gen.files[i] == again.files[i]); // deterministic
      std::string plan_text;
      nlohmann::json manifest;
      for (const auto& [path, text] : gen.files) {
        if (path == "plan.json") plan_text = text;
        if (path == "manifest.json") manifest = nlohmann::json::parse(text);
      }
      CHECK_NOTHROW(parse_plan(plan_text, "plan.json")); // the runtime's loader accepts it
      CHECK(manifest["kernels"].size() > 0);
      for (const auto& k : manifest["kernels"]) {
        const std::string kname = k["name"];
        for (const auto& [path, text] : gen.files)
          if (path == "kernels/" + kname + ".cu") {
            // A kernel of an architecture-specific target (the Hopper family: sm_90a) names it.
            // One compile per compile_class (harness.hpp): the GPUs come oldest first, so an
            // sm_80 kernel the H200 also uses unchanged compiles for sm_90.
            const std::string arch = k.contains("arch") ? k["arch"].get<std::string>() : g.arch;
            jobs.insert_or_assign(test::compile_class(kname, text, arch),
                                  Job{kname, text, arch, k["promises_no_spills"].get<bool>()});
          }
      }
    }
  }
  std::vector<const Job*> todo;
  for (const auto& [k, j] : jobs) todo.push_back(&j);
  MESSAGE(todo.size() << " distinct kernel compilations");
  std::vector<std::string> failures;
  std::mutex mu;
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < std::max(2u, std::thread::hardware_concurrency()); ++t)
    pool.emplace_back([&] {
      for (size_t i; (i = next++) < todo.size();) {
        const Job& j = *todo[i];
        const CompileOutput out = nvrtc_compile(j.source, j.name + ".cu", j.name, j.arch);
        std::lock_guard<std::mutex> lock(mu);
        if (!out.ok) failures.push_back(j.name + " for " + j.arch + ":\n" + out.log);
        else if (j.no_spills && (out.resources.spill_stores || out.resources.spill_loads))
          failures.push_back(j.name + " for " + j.arch + " spills");
      }
    });
  for (std::thread& t : pool) t.join();
  for (const std::string& f : failures) FAIL_CHECK(f);
}
