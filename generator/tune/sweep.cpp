#include "generator/tune/sweep.hpp"

#include "generator/select/families/hopper/tensor_map_binding.hpp"
#include "generator/select/library_layouts.hpp"
#include "runtime/cuda/cudnn_support.hpp"
#include "runtime/error.hpp"

#include <algorithm>
#include <map>

namespace kiln {

std::vector<WorkItem> sweep_work(const Plan& plan, Layout layout, const GpuDesc& g,
                                 bool all_variants) {
  std::map<std::string, std::vector<WorkItem>> by_key;
  for (size_t ph = 0; ph < plan.phases.size(); ++ph)
    for (size_t i = 0; i < plan.phases[ph].steps.size(); ++i) {
      // The layer as selection saw it: a chosen Hopper kernel's tensor maps are no part of
      // its key, and would make every variant but that family's look wrong.
      const Step& full = plan.phases[ph].steps[i];
      if (!tunable(full.fn) || full.kind == StepKind::free) continue;
      const Step s = without_tensor_maps(plan, full);
      TuneKey key = tune_key(plan, s, layout);
      auto it = by_key.find(key.id);
      if (it != by_key.end()) {
        for (WorkItem& w : it->second)
          if (std::find(w.layers.begin(), w.layers.end(), s.node) == w.layers.end())
            w.layers.push_back(s.node);
        continue;
      }
      // Every variant valid here, the activation layouts the plan keeps, as selection sees
      // them; no tuning database: the sweep measures what the cost model would weigh.
      const Choice c = select_variant(StepInfo{plan, s, g});
      std::vector<WorkItem>& items = by_key[key.id];
      for (size_t k = 0; k < c.valid.size() && (all_variants || k == 0); ++k)
        items.push_back({key, {s.node}, ph, i, c.valid[k].variant, c.valid[k].cost, k == 0});
    }
  std::vector<WorkItem> out;
  for (auto& [id, items] : by_key) {
    std::sort(items.begin(), items.end(),
              [](const WorkItem& a, const WorkItem& b) { return a.variant.name < b.variant.name; });
    for (WorkItem& w : items)
      out.push_back(std::move(w));
  }
  return out;
}

namespace {

// The plan with the step's arguments in the layouts the variant reads and writes (an
// alternative may want others than the chosen kernel; the check converts its data).
Plan with_variant_layouts(const Plan& plan, const Step& s, const Variant& v) {
  Plan p = plan;
  for (const auto& [role, layout] : v.layouts)
    if (const int b = s.arg(role); b >= 0) p.buffers[size_t(b)].layout = layout;
  return p;
}

// cuDNN's call for the layer: a weight gradient split over positions (its fp32 slices, summed
// by the partial.sum after it) is cuDNN's whole backward filter into a dw of x's type, added
// to p.
Step cudnn_peer_step(Plan& p, Step s) {
  const int part = s.arg("partial");
  if (s.fn != Fn::conv2d_backward_weight || part < 0) return s;
  Buffer dw = p.buffers[size_t(part)];
  dw.name += ".cudnn_dw";
  dw.shape.erase(dw.shape.begin());
  dw.dtype = p.buffers[size_t(s.need("x"))].dtype;
  p.buffers.push_back(dw);
  for (Arg& a : s.args)
    if (a.role == "partial") a = {"dw", int(p.buffers.size()) - 1};
  return s;
}

} // namespace

std::string sticky_cuda_error(std::string_view message) {
  // The CUDA runtime's errors that corrupt the context (its documentation: "the process is
  // left in an inconsistent state and any further CUDA work will return the same error").
  for (std::string_view e :
       {"cudaErrorIllegalInstruction", "cudaErrorIllegalAddress", "cudaErrorMisalignedAddress",
        "cudaErrorInvalidAddressSpace", "cudaErrorInvalidPc", "cudaErrorLaunchFailure",
        "cudaErrorHardwareStackError", "cudaErrorAssert", "cudaErrorTensorMemoryLeak"})
    if (message.find(e) != std::string_view::npos) return std::string(e);
  return "";
}

std::vector<SweepRow> run_sweep(const Plan& plan, const std::vector<WorkItem>& items,
                                const std::vector<size_t>& mine, const SweepDevice& device,
                                uint64_t seed, const SweepHooks& hooks) {
  std::vector<SweepRow> rows;
  std::map<std::string, std::pair<std::optional<double>, std::string>> cudnn; // per key
  size_t n = 0;
  for (; n < mine.size() && !(hooks.stop && hooks.stop()); ++n) {
    const WorkItem& w = items[mine[n]];
    if (hooks.progress) hooks.progress(n, mine.size(), w);
    const Step& chosen = plan.phases[w.phase].steps[w.step];
    Plan p = with_variant_layouts(plan, chosen, w.variant);
    const Step step = with_tensor_maps_of(p, chosen, w.variant);
    const Kernel k = kernel_of(w.variant);
    SweepRow row;
    row.item = mine[n];
    row.check = check_step(p, step, k, std::string(math_name(w.variant.math)), device.check,
                           seed + mine[n], CheckOptions{.images = device.check_images});
    row.check.node = step.node;
    if (row.check.pass && device.time) {
      try {
        row.timing = device.time(single_step_plan(p, step, &k, false));
      } catch (const Error& e) {
        row.check.pass = false;
        row.check.error = cat("timing failed: ", e.what());
      }
    }
    if (device.time && !cudnn.count(w.key.id)) {
      auto& [ms, note] = cudnn[w.key.id];
      note = cudnn_unsupported(step);
      if (note.empty()) {
        try {
          // cuDNN as a plan would call it: every image in the layout of the one it writes
          // (a network input read as NCHW by an NHWC kernel had no algorithm on the H200).
          Plan whole = plan;
          const Step bare = cudnn_peer_step(whole, without_tensor_maps(plan, chosen));
          const Plan lib = with_variant_layouts(whole, bare, library_layouts(whole, bare));
          Plan peer = single_step_plan(lib, bare, nullptr, false);
          Step& ps = peer.phases[0].steps[0];
          ps.kind = StepKind::library;
          ps.library = "cudnn";
          const DeviceTiming t = device.time(peer);
          ms = t.median_ms;
          note = t.note;
        } catch (const Error& e) {
          note = e.what();
        }
      }
    }
    if (device.time) std::tie(row.cudnn_ms, row.cudnn_note) = cudnn[w.key.id];
    const std::string sticky = sticky_cuda_error(row.check.error);
    rows.push_back(std::move(row));
    if (hooks.done) hooks.done(rows.back());
    if (!sticky.empty()) { // the context is gone: what follows would fail for this item's fault
      if (hooks.context_lost)
        hooks.context_lost(cat(w.variant.name, " left the CUDA context unusable (", sticky,
                               "); the sweep ended there, ", mine.size() - n - 1,
                               " item(s) not run: rerun them with --match, without it"));
      ++n;
      break;
    }
  }
  if (hooks.progress && n > 0) hooks.progress(mine.size(), mine.size(), items[mine[n - 1]]);
  // Winners: the fastest checked variant per shape.
  std::map<std::string, SweepRow*> best;
  for (SweepRow& r : rows) {
    if (!r.check.pass || !r.timing) continue;
    SweepRow*& b = best[items[r.item].key.id];
    if (!b || r.timing->median_ms < b->timing->median_ms) b = &r;
  }
  for (auto& [key, r] : best)
    r->winner = true;
  return rows;
}

} // namespace kiln
