#include "generator/rewrite/copy_forwarding.hpp"

#include <algorithm>

namespace kiln {

namespace {

bool is_plan_value(const Plan& p, int b) {
  const auto in = [b](const std::vector<int>& v) {
    return std::find(v.begin(), v.end(), b) != v.end();
  };
  return in(p.inputs) || in(p.outputs) || b == p.target || b == p.loss;
}

// The steps after copy `i` of phase `ph` that read its dst (none writes it, none in another
// phase, nothing else holds it), the last of them in `last`; empty where that does not hold.
std::vector<size_t> plain_readers(const Plan& p, size_t ph, size_t i, int dst, size_t& last) {
  std::vector<size_t> out;
  for (size_t q = 0; q < p.phases.size(); ++q)
    for (size_t j = 0; j < p.phases[q].steps.size(); ++j) {
      const Step& s = p.phases[q].steps[j];
      if ((q == ph && j == i) || s.kind == StepKind::free) continue;
      bool reads = false;
      for (const Arg& a : s.args)
        if (a.buffer == dst) {
          if (q != ph || j < i || fn_writes(s.fn, a.role) || !fn_reads(s.fn, a.role)) return {};
          reads = true;
        }
      if (reads) out.push_back(j);
    }
  if (!out.empty()) last = out.back();
  return out;
}

// Whether a step in (i, last] of the phase writes src's storage.
bool written_between(const Plan& p, const std::vector<Step>& steps, size_t i, size_t last,
                     int src) {
  const int base = p.base(src);
  for (size_t j = i + 1; j <= last; ++j)
    if (steps[j].kind != StepKind::free)
      for (const Arg& a : steps[j].args)
        if (p.base(a.buffer) == base && fn_writes(steps[j].fn, a.role)) return true;
  return false;
}

} // namespace

std::vector<ForwardedCopy> forward_copies(Plan& p) {
  std::vector<ForwardedCopy> out;
  if (!p.train) return out;
  for (size_t ph = 0; ph < p.phases.size(); ++ph) {
    std::vector<Step>& steps = p.phases[ph].steps;
    for (size_t i = 0; i < steps.size(); ++i) {
      const Step& s = steps[i];
      if (s.kind == StepKind::free || s.fn != Fn::copy || s.accumulate) continue;
      const int src = s.need("src"), dst = s.need("dst");
      const Buffer &bs = p.buffers[size_t(src)], &bd = p.buffers[size_t(dst)];
      if (bd.view_of >= 0 || is_persistent(bd.role) || is_plan_value(p, dst) ||
          bd.dtype != bs.dtype || bd.shape != bs.shape || bd.layout != bs.layout ||
          bd.view_pitch != 0 || bs.view_pitch != 0)
        continue;
      if (std::any_of(p.buffers.begin(), p.buffers.end(),
                      [&](const Buffer& b) { return b.view_of == dst; }))
        continue;
      size_t last = 0;
      const std::vector<size_t> rs = plain_readers(p, ph, i, dst, last);
      if (rs.empty() || written_between(p, steps, i, last, src)) continue;
      for (size_t j : rs)
        for (Arg& a : steps[j].args)
          if (a.buffer == dst) a.buffer = src;
      out.push_back({s.node, bs.name, bd.name, int(rs.size())});
      // The copy goes; so do frees of dst, and of src where one comes before its new last
      // reader (one after that reader keeps src alive).
      const int src_base = p.base(src);
      bool src_freed_early = false;
      std::vector<Step> kept;
      for (size_t j = 0; j < steps.size(); ++j) {
        const Step& t = steps[j];
        if (j == i || (t.kind == StepKind::free && t.buffer == dst)) continue;
        if (t.kind == StepKind::free && t.buffer == src_base && j < last) {
          src_freed_early = true;
          continue;
        }
        kept.push_back(t);
        if (j == last && src_freed_early) {
          Step f;
          f.kind = StepKind::free;
          f.buffer = src_base;
          kept.push_back(f);
        }
      }
      steps = std::move(kept);
      --i; // the step now at i follows the copy
    }
  }
  return out;
}

nlohmann::ordered_json forwarded_copy_json(const ForwardedCopy& c) {
  return {{"node", c.node}, {"source", c.source}, {"target", c.target}, {"readers", c.readers}};
}

} // namespace kiln
