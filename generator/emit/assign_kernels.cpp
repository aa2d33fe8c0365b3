#include "generator/emit/assign_kernels.hpp"

#include "generator/rewrite/layouts.hpp"
#include "generator/select/library_layouts.hpp"
#include "runtime/cuda/cudnn_support.hpp"
#include "runtime/error.hpp"

#include <map>

namespace kiln {

std::string step_label(const Step& s) { return s.node + " (" + std::string(fn_name(s.fn)) + ")"; }

namespace {

// Steps writing or reading buffer b.
void uses_of(const Plan& p, int b, std::vector<std::pair<size_t, size_t>>& writers, int& readers) {
  writers.clear();
  readers = 0;
  for (size_t ph = 0; ph < p.phases.size(); ++ph)
    for (size_t i = 0; i < p.phases[ph].steps.size(); ++i) {
      const Step& s = p.phases[ph].steps[i];
      for (const Arg& a : s.args)
        if (a.buffer == b) {
          bool w = false;
          for (std::string_view r : fn_signature(s.fn).writes)
            w |= r == a.role;
          if (w)
            writers.push_back({ph, i});
          else
            ++readers;
        }
    }
}

// Makes the step's arguments have the layouts its chosen variant needs.
bool reconcile(Plan& p, size_t ph, size_t& i, const Variant& v) {
  bool changed = false;
  for (const auto& [role, want] : v.layouts) {
    Step& s = p.phases[ph].steps[i];
    const int b = s.arg(role);
    if (b < 0 || p.buffers[b].layout == want) continue;
    std::vector<std::pair<size_t, size_t>> writers;
    int readers = 0;
    uses_of(p, b, writers, readers);
    // A weight-like buffer its one writer can write in any layout.
    const auto rewritable = [&] {
      const Fn f = p.phases[writers[0].first].steps[writers[0].second].fn;
      return f == Fn::conv2d_fold_bn || f == Fn::conv2d_flip_weight ||
             f == Fn::space_to_depth_forward || f == Fn::convert;
    };
    const bool free_layout = p.buffers[b].role == BufferRole::activation &&
                             p.buffers[b].view_of < 0 && writers.size() == 1 && readers == 1 &&
                             rewritable();
    bool written = false;
    for (std::string_view w : fn_signature(s.fn).writes)
      written |= w == role;
    if (free_layout && !written) {
      p.buffers[b].layout = want;
    } else if (!written) {
      const int copy = insert_convert(p, ph, i, b, want,
                                      p.buffers[b].name + "." + std::string(layout_name(want)));
      ++i; // the step moved one down
      for (Arg& a : p.phases[ph].steps[i].args)
        if (a.role == role) a.buffer = copy;
    } else {
      // An output: the step writes a copy in the layout it needs, converted back after it.
      if (s.accumulate)
        throw Error("", cat("node \"", s.node, "\""),
                    "cannot accumulate into an output of another layout");
      Buffer t = p.buffers[b];
      t.name += "." + std::string(layout_name(want));
      for (int k = 2; p.find_buffer(t.name) >= 0; ++k)
        t.name = p.buffers[b].name + "." + std::string(layout_name(want)) + "#" + std::to_string(k);
      t.role = BufferRole::activation;
      t.view_of = -1;
      t.view_offset = 0;
      t.layout = want;
      p.buffers.push_back(t);
      const int tmp = int(p.buffers.size()) - 1;
      for (Arg& a : p.phases[ph].steps[i].args)
        if (a.role == role) a.buffer = tmp;
      Step c;
      c.kind = StepKind::reference;
      c.fn = Fn::convert;
      c.node = p.buffers[b].name;
      c.args = {{"src", tmp}, {"dst", b}};
      p.phases[ph].steps.insert(p.phases[ph].steps.begin() + long(i) + 1, c);
    }
    changed = true;
  }
  return changed;
}

} // namespace

Assigned assign_kernels(Plan& p, const GpuDesc& g, bool keep_alternatives, bool cudnn_only,
                        const SelectionHints* hints) {
  // Layout requirements first (inserting conversions), so the final choice sees final layouts.
  for (size_t ph = 0; ph < p.phases.size(); ++ph)
    for (size_t i = 0; i < p.phases[ph].steps.size(); ++i) {
      const Step& s = p.phases[ph].steps[i];
      if (s.kind == StepKind::free) continue;
      const bool library = cudnn_unsupported(s).empty();
      if (cudnn_only && library) {
        reconcile(p, ph, i, library_layouts(p, s));
        continue;
      }
      const Choice c = select_variant(StepInfo{p, s, g}, true, hints);
      if (c.kernel)
        reconcile(p, ph, i, c.kernel->variant);
      else if (library)
        reconcile(p, ph, i, library_layouts(p, s));
    }
  Assigned out;
  std::map<std::string, size_t> index; // kernel name -> position in out.kernels
  std::vector<KernelRecord> alternatives;
  std::map<std::string, bool> seen_alternative;
  for (Phase& phase : p.phases)
    for (Step& s : phase.steps) {
      if (s.kind == StepKind::free) continue;
      if (cudnn_only && cudnn_unsupported(s).empty()) {
        s.kind = StepKind::library;
        s.library = "cudnn";
        out.library_steps.push_back({step_label(s), "cuDNN-only plan (--kernels cudnn)"});
        continue;
      }
      const Choice c = select_variant(StepInfo{p, s, g}, true, hints);
      if (!c.kernel) {
        s.kind = StepKind::library;
        s.library = "cudnn";
        out.library_steps.push_back({step_label(s), c.reason});
        continue;
      }
      const Variant& v = c.kernel->variant;
      auto it = index.find(v.name);
      if (it != index.end()) {
        // One name, one kernel: a family whose name omits a compiled-in parameter would
        // run a second layer with the first one's configuration (it did: mul's broadcast).
        const Variant& first = out.kernels[it->second].variant;
        if (first.cfg != v.cfg || first.header != v.header || first.grid != v.grid ||
            first.block != v.block)
          throw Error("", cat("kernel ", v.name),
                      cat("two configurations share this name (", step_label(s), " and ",
                          out.kernels[it->second].nodes.front(),
                          "): the family's name must include every compiled-in parameter"));
      }
      if (it == index.end()) {
        it = index.emplace(v.name, out.kernels.size()).first;
        out.kernels.push_back({v, c.kernel->cost, {}, c.reason, true, c.measured});
        p.kernels.push_back(kernel_of(v));
      }
      out.kernels[it->second].nodes.push_back(step_label(s));
      s.kind = StepKind::launch;
      s.kernel = int(it->second);
      if (keep_alternatives)
        for (size_t k = 1; k < c.valid.size(); ++k) {
          const Variant& alt = c.valid[k].variant;
          if (index.count(alt.name) || seen_alternative[alt.name]) continue;
          seen_alternative[alt.name] = true;
          alternatives.push_back(
              {alt, c.valid[k].cost, {step_label(s)}, "alternative for sweeps", false});
        }
    }
  for (KernelRecord& r : alternatives)
    if (!index.count(r.variant.name)) out.kernels.push_back(std::move(r));
  return out;
}

} // namespace kiln
