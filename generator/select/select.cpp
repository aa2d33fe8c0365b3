#include "generator/select/select.hpp"

#include "runtime/cuda/cudnn_support.hpp"
#include "runtime/error.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <optional>

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

// A parameter or what is derived from one (a folded weight, a flipped one): converted once,
// in the prepare phase, or written in the layout its kernel wants by the step deriving it.
bool parameter_like(const Buffer& b) {
  return b.role == BufferRole::param || b.role == BufferRole::state ||
         b.role == BufferRole::derived || b.name.rfind("fold:", 0) == 0 ||
         b.name.rfind("flip:", 0) == 0 || b.name.rfind("s2d:", 0) == 0;
}

bool converts_activations(const StepInfo& s, const Variant& v) {
  for (const auto& [role, layout] : v.layouts) {
    const int b = s.step.arg(role);
    if (b < 0) continue;
    const Buffer& buf = s.plan.buffers[b];
    if (!parameter_like(buf) && buf.layout != layout) return true;
  }
  return false;
}

// A measured winner that this step offers only with its parameters in the other image
// layout: the variant a family offers for the step once kernel assignment has converted
// them for some kernel (conv2d_direct reads w as the plan holds it and is named for it:
// "_wohwi_" after w went OHWI for an implicit GEMM, which a sweep of the final plan measures).
// The variant declares that layout, so assignment converts the parameter for it.
std::optional<Candidate> winner_with_parameters_converted(const StepInfo& s,
                                                          const std::string& winner) {
  Plan flipped = s.plan;
  bool any = false;
  for (const Arg& a : s.step.args) {
    Buffer& b = flipped.buffers[size_t(a.buffer)];
    if (!parameter_like(b) || b.shape.size() != 4) continue;
    b.layout = b.layout == Layout::nchw ? Layout::nhwc : Layout::nchw;
    any = true;
  }
  if (!any) return std::nullopt;
  const StepInfo fs{flipped, s.step, s.gpu};
  for (const Family* f : all_families())
    for (Variant& v : step_candidates(*f, fs))
      if (v.name == winner && invalid_reason(s.gpu, v).empty()) {
        CostEstimate cost = price_variant(s.gpu, v);
        return Candidate{std::move(v), cost};
      }
  return std::nullopt;
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
    // Moved, not copied: the rewrites price every step several times through here.
    const auto in_place_end =
        std::stable_partition(c.valid.begin(), c.valid.end(), [&](const Candidate& k) {
          return !converts_activations(s, k.variant);
        });
    for (auto it = in_place_end; it != c.valid.end(); ++it)
      converting.push_back(it->variant.name);
    if (in_place_end == c.valid.begin())
      converting.clear(); // none serves in place: all stay
    else
      c.valid.erase(in_place_end, c.valid.end());
  }
  std::stable_sort(c.valid.begin(), c.valid.end(), [](const Candidate& a, const Candidate& b) {
    return a.cost.micros < b.cost.micros;
  });
  // Variants whose price is not trusted go last, after every priced one (a measured winner
  // below may still bring one first).
  const auto priced_end =
      std::stable_partition(c.valid.begin(), c.valid.end(),
                            [](const Candidate& k) { return k.variant.measured_only.empty(); });
  const size_t priced = size_t(priced_end - c.valid.begin()), untrusted = c.valid.size() - priced;
  const double cheapest = c.valid.empty() ? 0 : c.valid.front().cost.micros;
  // The near ties among the priced variants only.
  const bool near_tie = prefer_headroom_among_near_ties({c.valid.begin(), priced_end});
  if (hints && !c.valid.empty())
    if (const std::string w = hints->measured_winner(s); !w.empty()) {
      auto it = std::find_if(c.valid.begin(), c.valid.end(),
                             [&](const Candidate& k) { return k.variant.name == w; });
      if (it == c.valid.end())
        if (std::optional<Candidate> conv = winner_with_parameters_converted(s, w)) {
          conv->cost.micros *= hints->correction(conv->variant.family);
          c.valid.push_back(std::move(*conv));
          it = c.valid.end() - 1;
        }
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
    const size_t ranked = priced > 0 ? priced : c.valid.size(); // what "cheapest" is of
    c.reason =
        fmt::format("cheapest of {} valid variant{}: est. {:.1f} us (floor {:.1f} us), "
                    "{} blocks/SM ({} bound), fill {:.0f}%",
                    ranked, ranked == 1 ? "" : "s", best.cost.micros, best.cost.floor_micros,
                    best.cost.occ.blocks_per_sm, best.cost.occ.limiter, best.cost.fill * 100);
    if (!best.variant.measured_only.empty())
      c.reason = cat(c.reason, "; the only kind valid here, though its price is not trusted (",
                     best.variant.measured_only, ")");
    else if (untrusted > 0)
      c.reason = cat(c.reason, "; ", untrusted, " more chosen only when measured (",
                     c.valid.back().variant.measured_only, ")");
    if (near_tie)
      c.reason = fmt::format("{}; within {:g}% of the cheapest ({:.1f} us), the most headroom in "
                             "its own limits (ceiling {:.2f} of peak without DRAM's)",
                             c.reason, kNearTie * 100, cheapest, own_ceiling(best.cost.ceilings));
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

double own_ceiling(const Ceilings& c) {
  return std::min({c.math, c.l2, c.smem, c.issue, c.latency});
}

bool prefer_headroom_among_near_ties(std::span<Candidate> sorted) {
  if (sorted.size() < 2) return false;
  const double limit = sorted.front().cost.micros * (1 + kNearTie);
  auto best = sorted.begin();
  for (auto it = sorted.begin() + 1; it != sorted.end() && it->cost.micros <= limit; ++it)
    if (own_ceiling(it->cost.ceilings) > own_ceiling(best->cost.ceilings) + 1e-9) best = it;
  if (best == sorted.begin()) return false;
  std::rotate(sorted.begin(), best, best + 1);
  return true;
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
