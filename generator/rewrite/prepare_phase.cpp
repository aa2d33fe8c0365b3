#include "generator/rewrite/prepare_phase.hpp"

#include "runtime/step_fn.hpp"
#include "runtime/step_json.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace kiln {

namespace {

// How many steps of the plan write each base buffer.
std::vector<int> writer_counts(const Plan& p) {
  std::vector<int> n(p.buffers.size(), 0);
  for (const Phase& ph : p.phases)
    for (const Step& s : ph.steps)
      if (s.kind != StepKind::free)
        for (const Arg& a : s.args)
          if (fn_writes(s.fn, a.role)) ++n[size_t(p.base(a.buffer))];
  return n;
}

// What a parameter-only step computes: its function, kernel, parameters and what it reads,
// not where it writes or the node it serves (whose attributes, such as a tile's padding,
// do not change a weight). Two steps with one key write the same values: a tiled plan
// folds each tile's batchnorm again.
std::string work_key(const Step& s, const Plan& p) {
  Step k = s;
  k.node.clear();
  k.attrs = {};
  std::erase_if(k.args, [&](const Arg& a) { return fn_writes(s.fn, a.role); });
  return step_to_json(k, p).dump();
}

} // namespace

int hoist_parameter_work(Plan& p) {
  if (p.train || p.phase("prepare")) return 0;
  auto fwd = std::find_if(p.phases.begin(), p.phases.end(),
                          [](const Phase& ph) { return ph.name == "forward"; });
  if (fwd == p.phases.end()) return 0;
  const std::vector<int> writers = writer_counts(p);
  std::vector<char> viewed(p.buffers.size(), 0);
  for (const Buffer& b : p.buffers)
    if (b.view_of >= 0) viewed[size_t(b.view_of)] = 1;
  // Bases holding what the parameters alone determine.
  std::vector<char> fixed(p.buffers.size(), 0);
  for (size_t b = 0; b < p.buffers.size(); ++b)
    fixed[b] = p.buffers[b].role == BufferRole::param || p.buffers[b].role == BufferRole::state;
  std::vector<Step> prepare, rest;
  std::map<std::string, size_t> computed; // work_key -> its step in prepare
  std::map<int, int> same;                // a duplicate's output -> the first one's
  auto remap = [&](Step& s) {
    for (Arg& a : s.args)
      if (auto it = same.find(a.buffer); it != same.end()) a.buffer = it->second;
  };
  for (Step& s : fwd->steps) {
    remap(s);
    // A fill_zero of a buffer nothing else writes is constant work (an in-kernel split's
    // tile counters, which every launch leaves zero): once, like the parameters' work.
    bool reads_fixed = s.fn == Fn::fill_zero, hoist = s.kind != StepKind::free && !s.accumulate;
    for (const Arg& a : s.args) {
      if (!hoist) break;
      const int base = p.base(a.buffer);
      if (!fn_writes(s.fn, a.role)) {
        hoist = fixed[size_t(base)];
        reads_fixed = true;
      } else {
        // A transient written here only, never seen through a view: it can persist.
        const Buffer& b = p.buffers[size_t(base)];
        hoist = b.role == BufferRole::activation && a.buffer == base && !viewed[size_t(base)] &&
                writers[size_t(base)] == 1 && !fn_updates(s.fn, a.role);
      }
    }
    if (!hoist || !reads_fixed) {
      rest.push_back(std::move(s));
      continue;
    }
    // Zeros are not shared: each counter array serves its own kernel, sized for it.
    const std::string key = s.fn == Fn::fill_zero ? "" : work_key(s, p);
    if (auto it = computed.find(key); !key.empty() && it != computed.end()) { // reuse it
      for (const Arg& a : s.args)
        if (fn_writes(s.fn, a.role)) same[a.buffer] = prepare[it->second].need(a.role);
      continue;
    }
    for (const Arg& a : s.args)
      if (fn_writes(s.fn, a.role)) {
        p.buffers[size_t(a.buffer)].role = BufferRole::derived;
        fixed[size_t(a.buffer)] = 1;
      }
    computed.emplace(key, prepare.size());
    prepare.push_back(std::move(s));
  }
  fwd->steps = std::move(rest);
  for (Phase& ph : p.phases)
    for (Step& s : ph.steps)
      remap(s);
  const int moved = int(prepare.size());
  if (moved) p.phases.insert(p.phases.begin(), Phase{"prepare", std::move(prepare)});
  return moved;
}

} // namespace kiln
