#include "generator/rewrite/copy_forwarding.hpp"

#include "generator/lower/plan_builder.hpp"
#include "generator/rewrite/readers.hpp"

namespace kiln {

namespace {

// The steps after copy `i` of phase `ph` that read its dst (none writes it, none in another
// phase), the last of them in `last`; empty where that does not hold.
std::vector<size_t> plain_readers(const Plan& p, size_t ph, size_t i, int dst, size_t& last) {
  std::vector<size_t> out;
  const std::vector<std::vector<Use>> uses = buffer_uses(p, false); // (alive for the loop)
  for (const Use& u : uses[size_t(dst)]) {
    if (u.phase == ph && u.step == i) continue;
    const Fn fn = p.phases[u.phase].steps[u.step].fn;
    if (u.phase != ph || u.step < i || fn_writes(fn, u.role) || !fn_reads(fn, u.role)) return {};
    if (out.empty() || out.back() != u.step) out.push_back(u.step);
  }
  if (!out.empty()) last = out.back();
  return out;
}

// Whether a step in (i, last] of the phase writes src's storage.
bool written_between(const Plan& p, const std::vector<Step>& steps, size_t i, size_t last,
                     int src) {
  const int base = p.base(src);
  for (size_t j = i + 1; j <= last; ++j)
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
      if (bd.view_of >= 0 || is_persistent(bd.role) || held_beyond_steps(p, dst) ||
          bd.dtype != bs.dtype || bd.shape != bs.shape || bd.layout != bs.layout ||
          bd.view_pitch != 0 || bs.view_pitch != 0)
        continue;
      size_t last = 0;
      const std::vector<size_t> rs = plain_readers(p, ph, i, dst, last);
      if (rs.empty() || written_between(p, steps, i, last, src)) continue;
      for (size_t j : rs)
        for (Arg& a : steps[j].args)
          if (a.buffer == dst) a.buffer = src;
      out.push_back({s.node, bs.name, bd.name, int(rs.size())});
      // The copy goes (the plan's frees are placed after the rewrites: finish_plan).
      steps.erase(steps.begin() + long(i));
      --i; // the step now at i follows the copy
    }
  }
  return out;
}

nlohmann::ordered_json forwarded_copy_json(const ForwardedCopy& c) {
  return {{"node", c.node}, {"source", c.source}, {"target", c.target}, {"readers", c.readers}};
}

} // namespace kiln
