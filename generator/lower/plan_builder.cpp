#include "generator/lower/plan_builder.hpp"

#include "runtime/error.hpp"
#include "schedules/memory_plan.hpp"

#include <unordered_map>

namespace kiln {

PlanBuilder::PlanBuilder(Plan header) : plan_(std::move(header)) {}

int PlanBuilder::buffer(const std::string& name, const Shape& shape, BufferRole role, DType dtype) {
  if (plan_.find_buffer(name) >= 0) throw Error("", "plan", cat("duplicate buffer \"", name, "\""));
  plan_.buffers.push_back(Buffer{name, shape, dtype, role, 0, -1});
  return int(plan_.buffers.size()) - 1;
}

int PlanBuilder::buffer(const std::string& name, const Shape& shape, BufferRole role) {
  return buffer(name, shape, role, plan_.dtype);
}

int PlanBuilder::view(const std::string& name, const Shape& shape, int of) {
  const int base = plan_.base(of);
  const int b = buffer(name, shape, plan_.buffers[base].role, plan_.buffers[base].dtype);
  plan_.buffers[b].view_of = base;
  return b;
}

void PlanBuilder::phase(const std::string& name) { plan_.phases.push_back(Phase{name, {}}); }

Step& PlanBuilder::step(Step s) {
  plan_.phases.back().steps.push_back(std::move(s));
  return plan_.phases.back().steps.back();
}

Plan PlanBuilder::finish() { return finish_plan(std::move(plan_)); }

std::vector<std::vector<Use>> buffer_uses(const Plan& p, bool by_base) {
  std::vector<std::vector<Use>> uses(p.buffers.size());
  for (size_t ph = 0; ph < p.phases.size(); ++ph)
    for (size_t s = 0; s < p.phases[ph].steps.size(); ++s)
      for (const Arg& a : p.phases[ph].steps[s].args)
        uses[by_base ? p.base(a.buffer) : a.buffer].push_back({ph, s, a.role});
  return uses;
}

namespace {

// Removes buffers nothing refers to (left behind by passes) and renumbers the rest.
void drop_unused_buffers(Plan& p) {
  const size_t nb = p.buffers.size();
  std::vector<char> used(nb, 0);
  for (const Phase& ph : p.phases)
    for (const Step& s : ph.steps) {
      for (const Arg& a : s.args)
        used[a.buffer] = 1;
      if (s.buffer >= 0) used[s.buffer] = 1;
    }
  for (const ParamBinding& pb : p.params) {
    used[pb.buffer] = 1;
    if (pb.grad >= 0) used[pb.grad] = 1;
  }
  for (int b : p.inputs)
    used[b] = 1;
  for (int b : p.outputs)
    used[b] = 1;
  if (p.target >= 0) used[p.target] = 1;
  if (p.loss >= 0) used[p.loss] = 1;
  for (size_t b = 0; b < nb; ++b)
    if (used[b] && p.buffers[b].view_of >= 0) used[p.buffers[b].view_of] = 1;
  std::vector<int> remap(nb, -1);
  std::vector<Buffer> kept;
  for (size_t b = 0; b < nb; ++b)
    if (used[b]) {
      remap[b] = int(kept.size());
      kept.push_back(std::move(p.buffers[b]));
    }
  for (Buffer& b : kept)
    if (b.view_of >= 0) b.view_of = remap[b.view_of];
  p.buffers = std::move(kept);
  auto fix = [&](int& b) {
    if (b >= 0) b = remap[b];
  };
  for (Phase& ph : p.phases)
    for (Step& s : ph.steps) {
      for (Arg& a : s.args)
        fix(a.buffer);
      fix(s.buffer);
    }
  for (ParamBinding& pb : p.params)
    fix(pb.buffer), fix(pb.grad);
  for (int& b : p.inputs)
    fix(b);
  for (int& b : p.outputs)
    fix(b);
  fix(p.target);
  fix(p.loss);
}

} // namespace

Plan finish_plan(Plan plan_) {
  drop_unused_buffers(plan_);
  // Global step order across phases; lifetimes of transient base buffers.
  const size_t nb = plan_.buffers.size();
  std::vector<int> first(nb, -1), last(nb, -1);
  std::vector<std::pair<size_t, size_t>> where; // global index -> (phase, step)
  int g = 0;
  for (size_t p = 0; p < plan_.phases.size(); ++p)
    for (size_t s = 0; s < plan_.phases[p].steps.size(); ++s, ++g) {
      where.push_back({p, s});
      for (const Arg& a : plan_.phases[p].steps[s].args) {
        const int b = plan_.base(a.buffer);
        if (first[b] < 0) first[b] = g;
        last[b] = g;
      }
    }
  const int total = g;

  // Frees right after each transient buffer's last use, in that step's phase.
  std::vector<std::vector<std::vector<int>>> frees(plan_.phases.size());
  for (size_t p = 0; p < plan_.phases.size(); ++p)
    frees[p].resize(plan_.phases[p].steps.size());
  for (size_t b = 0; b < nb; ++b) {
    const Buffer& buf = plan_.buffers[b];
    if (buf.view_of >= 0 || is_persistent(buf.role) || last[b] < 0) continue;
    auto [p, s] = where[last[b]];
    frees[p][s].push_back(int(b));
  }
  for (size_t p = 0; p < plan_.phases.size(); ++p) {
    std::vector<Step> steps;
    for (size_t s = 0; s < plan_.phases[p].steps.size(); ++s) {
      steps.push_back(std::move(plan_.phases[p].steps[s]));
      for (int b : frees[p][s]) {
        Step f;
        f.kind = StepKind::free;
        f.buffer = b;
        steps.push_back(f);
      }
    }
    plan_.phases[p].steps = std::move(steps);
  }

  // Arena layout: persistent buffers live throughout, transient ones over their steps.
  std::vector<sched::Lifetime> life;
  std::vector<int> ids;
  for (size_t b = 0; b < nb; ++b) {
    const Buffer& buf = plan_.buffers[b];
    if (buf.view_of >= 0) continue;
    if (!is_persistent(buf.role) && first[b] < 0) continue; // never used: no space
    sched::Lifetime l{buf.bytes(), 0, total};
    if (!is_persistent(buf.role)) l = {buf.bytes(), first[b], last[b]};
    life.push_back(l);
    ids.push_back(int(b));
  }
  const sched::MemoryPlan mp = sched::plan_memory(life);
  for (size_t i = 0; i < ids.size(); ++i)
    plan_.buffers[ids[i]].offset = mp.offsets[i];
  for (Buffer& buf : plan_.buffers)
    if (buf.view_of >= 0) buf.offset = plan_.buffers[buf.view_of].offset;
  plan_.arena_bytes = mp.arena_bytes;
  validate_plan(plan_);
  return plan_;
}

} // namespace kiln
