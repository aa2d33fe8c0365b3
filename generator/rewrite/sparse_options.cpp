// What the sparse planner is told (modes, densities from a profile and the hints) and what
// it reports (a decision per conv step, as the manifest records it).
#include "generator/rewrite/sparse_plan.hpp"

#include <cmath>

namespace kiln {

std::optional<SparseMode> parse_sparse_mode(std::string_view s) {
  if (s == "auto") return SparseMode::automatic;
  if (s == "off") return SparseMode::off;
  if (s == "force") return SparseMode::force;
  return std::nullopt;
}

int64_t sparse_slice(int64_t cg) {
  int64_t cs = 1;
  while (cs < std::min<int64_t>(32, cg))
    cs *= 2;
  return cs;
}

SparseOptions sparse_options(const Model& m, SparseMode mode, const Profile* profile) {
  SparseOptions o;
  o.mode = mode;
  for (const Node& n : m.nodes) {
    if (n.hints.activation_density) {
      o.density[n.name] = *n.hints.activation_density;
      o.source[n.name] = "hint";
    }
    if (n.hints.variant == "sparse") o.forced.insert(n.name);
    if (n.hints.variant == "dense") o.kept_dense.insert(n.name);
    if (n.hints.sparse_threshold) o.threshold[n.name] = *n.hints.sparse_threshold;
  }
  if (profile)
    for (const auto& [layer, d] : profile_densities(*profile, m)) {
      o.density[layer] = d;
      o.source[layer] = "profile";
    }
  return o;
}

nlohmann::ordered_json decision_json(const SparseDecision& d) {
  nlohmann::ordered_json j;
  auto round3 = [](double v) { return std::round(v * 1000) / 1000; };
  j["layer"] = d.layer;
  j["fn"] = d.fn;
  j["phase"] = d.phase;
  if (d.density >= 0) j["density"] = std::round(d.density * 1e4) / 1e4;
  j["density_source"] = d.source;
  j["path"] = d.path;
  if (d.threshold >= 0) {
    j["threshold"] = std::round(d.threshold * 1e6) / 1e6;
    j["threshold_nnz"] = d.threshold_nnz;
  }
  if (d.dense_us >= 0) j["dense_us"] = round3(d.dense_us);
  if (d.sparse_us >= 0) j["sparse_us"] = round3(d.sparse_us);
  if (d.compaction_us >= 0) j["compaction_us"] = round3(d.compaction_us);
  if (!d.compaction.empty()) j["compaction"] = d.compaction;
  j["reason"] = d.reason;
  return j;
}

} // namespace kiln
