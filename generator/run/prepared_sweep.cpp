#include "generator/run/prepared_sweep.hpp"

#include "generator/compile/cache.hpp"
#include "generator/model/model_json.hpp"
#include "runtime/error.hpp"
#include "runtime/progress.hpp"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <set>

namespace kiln {

namespace {

// Whether `layer` (a fused step's nodes joined by '+') has a node named `name`.
bool has_node(std::string_view layer, std::string_view name) {
  for (size_t at = 0; at <= layer.size();) {
    const size_t end = std::min(layer.find('+', at), layer.size());
    if (layer.substr(at, end - at) == name) return true;
    at = end + 1;
  }
  return false;
}

// The items of the shapes one of whose layers has a node of one of `names`; a name that
// none has is an error naming the layers there are.
std::vector<WorkItem> only_layers(std::vector<WorkItem> items,
                                  const std::vector<std::string>& names) {
  const auto has = [](const WorkItem& it, std::string_view name) {
    return std::any_of(it.layers.begin(), it.layers.end(),
                       [&](const std::string& l) { return has_node(l, name); });
  };
  for (const std::string& name : names) {
    if (std::any_of(items.begin(), items.end(), [&](const WorkItem& it) { return has(it, name); }))
      continue;
    std::vector<std::string> known;
    for (const WorkItem& it : items)
      for (const std::string& l : it.layers)
        if (std::find(known.begin(), known.end(), l) == known.end()) known.push_back(l);
    throw Error("", "--layers",
                cat("no swept layer has a node named \"", name,
                    "\"; the swept layers: ", fmt::format("{}", fmt::join(known, ", "))));
  }
  std::erase_if(items, [&](const WorkItem& it) {
    return std::none_of(names.begin(), names.end(),
                        [&](const std::string& n) { return has(it, n); });
  });
  return items;
}

// Of each shape, the cost model's pick (the baseline) and the variants whose names contain one
// of `texts`; a text no variant of the swept shapes contains besides the picks is an error.
std::vector<WorkItem> only_matching(std::vector<WorkItem> items,
                                    const std::vector<std::string>& texts) {
  const auto has = [](const WorkItem& it, const std::string& t) {
    return it.variant.name.find(t) != std::string::npos;
  };
  for (const std::string& t : texts)
    if (std::none_of(items.begin(), items.end(),
                     [&](const WorkItem& it) { return !it.model_choice && has(it, t); }))
      throw Error("", "--match",
                  cat("no variant of the swept layers but the cost model's picks has \"", t,
                      "\" in its name (", items.size(),
                      " variants; `kiln generate --variants all` lists them in the manifest)"));
  std::erase_if(items, [&](const WorkItem& it) {
    return !it.model_choice && std::none_of(texts.begin(), texts.end(),
                                            [&](const std::string& t) { return has(it, t); });
  });
  return items;
}

// The generated directory cut to the kernels a filtered sweep runs: the plan's own and its
// items' variants. Compiling every variant of every layer first made an H200 session's
// `--variants all --layers conv1` of resnet50 b256 time nothing in its 60 s
// (bench/results/h200_2026-11-28b).
void keep_swept_kernels(Generated& g, const std::vector<WorkItem>& items) {
  std::set<std::string> swept;
  for (const WorkItem& it : items)
    swept.insert(it.variant.name);
  nlohmann::ordered_json kept = nlohmann::ordered_json::array();
  std::set<std::string> dropped;
  for (const auto& k : g.manifest["kernels"])
    if (k.value("chosen", true) || swept.count(k.value("name", "")))
      kept.push_back(k);
    else
      dropped.insert(k.value("source", ""));
  g.manifest["kernels"] = std::move(kept);
  std::erase_if(g.files, [&](const auto& f) { return dropped.count(f.first) > 0; });
  for (auto& [path, text] : g.files)
    if (path == "manifest.json") text = g.manifest.dump(2) + "\n";
}

} // namespace

PreparedSweep prepare_sweep(Model m, const GpuDesc& g, const SweepRequest& r, bool lock) {
  if (r.warmup < 0) throw Error("", "--warmup", "must be 0 or more");
  PreparedSweep p;
  p.options.shard = r.shard.empty() ? Shard{} : parse_shard(r.shard);
  p.model = std::move(m);
  p.gpu = g;
  std::vector<std::string> key = {
      model_to_text(p.model), g.identity(), KILN_VERSION, r.device, r.variants, r.shard};
  if (!r.layers.empty()) key.push_back(fmt::format("layers {}", fmt::join(r.layers, ",")));
  if (!r.match.empty()) key.push_back(fmt::format("match {}", fmt::join(r.match, ",")));
  if (!r.match.empty() && r.variants != "all")
    throw Error("", "--match", "selects among every variant of a layer: it needs --variants all");
  if (r.train) key.push_back("train");
  p.dir = r.output.empty() ? KernelCache::default_dir() + "/sweeps/" + cache_key(key) : r.output;
  if (lock) {
    std::error_code ec;
    std::filesystem::create_directories(p.dir, ec);
    p.lock = io::FileLock::try_acquire(p.dir + "/.kiln-lock");
    if (!p.lock)
      throw Error(p.dir, "",
                  cat("another kiln ", r.command,
                      " is sweeping in this directory; wait for it to finish or name another "
                      "with -o"));
  }
  GenerateOptions go;
  go.all_variants = r.variants == "all";
  go.tuning_db = "none"; // measure what the cost model weighs, not an earlier measurement
  go.sparse = SparseMode::off;
  go.train = r.train;
  p.gen = generate(p.model, g, go);
  p.items = sweep_work(p.gen.plan, p.gen.layout, g, go.all_variants);
  if (!r.layers.empty()) p.items = only_layers(std::move(p.items), r.layers);
  if (!r.match.empty()) p.items = only_matching(std::move(p.items), r.match);
  if (!r.layers.empty() || !r.match.empty()) keep_swept_kernels(p.gen, p.items);
  if (p.items.empty()) {
    // A layer the cost model splits along K in two steps runs as a partial GEMM plus a sum:
    // two kernels a sweep does not time as one variant (the in-kernel split is one, swept).
    bool split = false;
    for (const Phase& ph : p.gen.plan.phases)
      for (const Step& s : ph.steps)
        split = split || s.fn == Fn::conv2d_forward_partial || s.fn == Fn::linear_forward_partial;
    throw Error(p.model.file, "",
                cat(r.command,
                    ": no conv, linear or pooling layer with a generated kernel to sweep",
                    split ? " (the cost model splits this one along K into a partial GEMM and a "
                            "separate sum, which a sweep does not time as one variant; a larger "
                            "--batch avoids the split)"
                          : ""));
  }
  SweepOptions& so = p.options;
  so.device = r.device;
  so.seed = r.seed;
  so.check_images = r.check_images;
  so.runs = r.runs, so.warmup = r.warmup;
  so.title = fmt::format("kiln {} {} on {} ({})", r.command, p.model.name, g.name, r.device);
  so.progress = ProgressLine::stderr_is_terminal();
  so.log_as = r.command;
  return p;
}

SweepResult run_prepared_sweep(const PreparedSweep& p) {
  write_generated(p.gen, p.dir + "/generated");
  return sweep_directory(p.dir, p.gen.plan, p.items, p.gpu, p.options);
}

} // namespace kiln
