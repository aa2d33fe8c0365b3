#include "generator/select/select.hpp"

#include "runtime/cuda/cudnn_support.hpp"
#include "runtime/error.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace kiln {

std::string invalid_reason(const GpuDesc& g, const Variant& v) {
  if (v.threads() > g.max_threads_per_block)
    return fmt::format("{} threads per block > {}", v.threads(), g.max_threads_per_block);
  const int64_t smem = v.static_smem + v.dynamic_smem;
  if (smem > g.shared_memory_per_block_optin)
    return fmt::format("{} bytes of shared memory > {} (opt-in)", smem,
                       g.shared_memory_per_block_optin);
  if (v.static_smem > g.shared_memory_per_block)
    return fmt::format("{} bytes of static shared memory > {}", v.static_smem,
                       g.shared_memory_per_block);
  if (int64_t(v.registers_per_thread) * v.threads() > g.registers_per_block)
    return fmt::format("{} registers x {} threads > {}", v.registers_per_thread, v.threads(),
                       g.registers_per_block);
  if (v.grid[1] > 65535 || v.grid[2] > 65535 || v.grid[0] > 2147483647) return "grid too large";
  return "";
}

CostEstimate price_variant(const GpuDesc& g, Variant& v) {
  CostEstimate cost = estimate_kernel(g, v.work());
  // A priced main loop is compiled for the occupancy it was priced at (Variant).
  if (v.loop.mma_flops > 0) v.min_blocks_per_sm = std::max(1, cost.occ.blocks_per_sm);
  return cost;
}

namespace {

bool converts_activations(const StepInfo& s, const Variant& v) {
  for (const auto& [role, layout] : v.layouts) {
    const int b = s.step.arg(role);
    if (b < 0) continue;
    const Buffer& buf = s.plan.buffers[b];
    const bool param = buf.role == BufferRole::param || buf.role == BufferRole::state ||
                       buf.role == BufferRole::derived || buf.name.rfind("fold:", 0) == 0;
    if (!param && buf.layout != layout) return true;
  }
  return false;
}

} // namespace

Choice select_variant(const StepInfo& s, bool keep_activation_layouts,
                      const SelectionHints* hints) {
  Choice c;
  std::vector<std::string> rejected;
  for (const Family* f : all_families())
    for (Variant& v : step_candidates(*f, s)) {
      const std::string why = invalid_reason(s.gpu, v);
      if (!why.empty()) {
        rejected.push_back(v.name + ": " + why);
        continue;
      }
      CostEstimate cost = price_variant(s.gpu, v);
      if (hints) cost.micros *= hints->correction(v.family);
      c.valid.push_back({std::move(v), cost});
    }
  std::vector<std::string> converting; // valid, but left out for the layouts they need
  if (keep_activation_layouts) {
    std::vector<Candidate> in_place;
    for (Candidate& cand : c.valid)
      if (!converts_activations(s, cand.variant))
        in_place.push_back(cand);
      else
        converting.push_back(cand.variant.name);
    if (in_place.empty())
      converting.clear(); // none serves in place: all stay
    else
      c.valid = std::move(in_place);
  }
  std::stable_sort(c.valid.begin(), c.valid.end(), [](const Candidate& a, const Candidate& b) {
    return a.cost.micros < b.cost.micros;
  });
  if (hints && !c.valid.empty())
    if (const std::string w = hints->measured_winner(s); !w.empty()) {
      const auto it = std::find_if(c.valid.begin(), c.valid.end(),
                                   [&](const Candidate& k) { return k.variant.name == w; });
      if (it != c.valid.end()) {
        std::rotate(c.valid.begin(), it, it + 1); // the winner first, the rest by cost
        c.kernel = c.valid.front();
        c.measured = true;
        c.reason = hints->measured_reason(s, w);
        return c;
      }
      const bool rejected_here = std::any_of(rejected.begin(), rejected.end(),
                                             [&](auto& r) { return r.rfind(w + ": ", 0) == 0; });
      const bool converts = std::find(converting.begin(), converting.end(), w) != converting.end();
      hints->winner_ignored(s, w,
                            rejected_here ? "it is invalid for this shape on this GPU"
                            : converts    ? "it needs an activation in another layout here"
                                          : "no family offers it for this step any more");
    }
  if (!c.valid.empty()) {
    const Candidate& best = c.valid.front();
    c.kernel = best;
    c.reason = fmt::format("cheapest of {} valid variant{}: est. {:.1f} us (floor {:.1f} us), "
                           "{} blocks/SM ({} bound), fill {:.0f}%",
                           c.valid.size(), c.valid.size() == 1 ? "" : "s", best.cost.micros,
                           best.cost.floor_micros, best.cost.occ.blocks_per_sm,
                           best.cost.occ.limiter, best.cost.fill * 100);
    return c;
  }
  if (const std::string no = cudnn_unsupported(s.step); !no.empty())
    throw Error("", cat("node \"", s.step.node, "\""),
                cat("no kernel template serves ", fn_name(s.step.fn), " on ", s.gpu.arch,
                    rejected.empty() ? std::string() : " (rejected: " + rejected.front() + ")",
                    ", and cuDNN does not compute it (", no, ")"));
  c.reason = rejected.empty() ? cat("no template serves ", fn_name(s.step.fn), " here: cuDNN")
                              : cat("no template variant fits (", rejected.front(), "): cuDNN");
  return c;
}

double kernel_estimate_us(const StepInfo& s) {
  try {
    const Choice c = select_variant(s);
    return c.kernel ? c.kernel->cost.micros : INFINITY;
  } catch (const Error&) { // neither a template nor cuDNN computes it
    return INFINITY;
  }
}

} // namespace kiln
