#include "generator/schedule/model_chain.hpp"

#include "runtime/error.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace kiln {

namespace {

// Cut positions k: after node k exactly node k's value is still needed.
std::vector<int> cuts(const Model& m) {
  const int n = int(m.nodes.size());
  std::vector<int> last_use(n, -1);
  int input_last = -1;
  for (int i = 0; i < n; ++i)
    for (int r : m.nodes[i].inputs)
      (r == kModelInput ? input_last : last_use[r]) = i;
  std::vector<int> r;
  // live(k) = values v <= k used after k; counted incrementally.
  std::vector<int> ends(n + 1, 0); // how many values stop being live after position k
  int live = 0;
  for (int k = 0; k < n - 1; ++k) {
    if (last_use[k] > k) ++live, ++ends[last_use[k]];
    live -= ends[k];
    if (live == 1 && last_use[k] > k && input_last <= k) r.push_back(k);
  }
  return r;
}

// Op-level simulation: the peak of live bytes while running `seq`, starting with `start`
// resident; a bundle dies right after its last use in `seq` unless it is in `keep`.
int64_t simulate_peak(const TrainingGraph& g, const std::vector<int>& seq,
                      const std::set<int>& start, const std::set<int>& keep,
                      std::set<int>* end_resident = nullptr) {
  const auto& ops = g.ops();
  std::map<int, size_t> last; // bundle -> last step reading it
  for (size_t s = 0; s < seq.size(); ++s)
    for (int i : ops[seq[s]].inputs)
      last[i] = s;
  std::set<int> res = start;
  int64_t live = 0;
  for (int j : res)
    live += ops[j].output_bytes;
  int64_t peak = live;
  for (size_t s = 0; s < seq.size(); ++s) {
    const TrainOp& op = ops[seq[s]];
    const bool fresh = !res.count(seq[s]);
    peak = std::max(peak, live + op.temp_bytes + (fresh ? op.output_bytes : 0));
    if (fresh) res.insert(seq[s]), live += op.output_bytes;
    for (auto it = res.begin(); it != res.end();) {
      const auto l = last.find(*it);
      if (!keep.count(*it) && (l == last.end() || l->second <= s)) {
        live -= ops[*it].output_bytes;
        it = res.erase(it);
      } else {
        ++it;
      }
    }
  }
  if (end_resident) *end_resident = res;
  return peak;
}

} // namespace

ModelChain model_chain(const TrainingGraph& g, const std::vector<double>& times, int max_stages) {
  const Model& m = g.model();
  const int n = int(m.nodes.size());
  std::vector<int> c = cuts(m);
  // A boundary whose value no backward reads only costs memory in the chain model (a stage
  // keeps its output for the next stage's backward): merge across it.
  {
    std::vector<char> read_by_backward(g.ops().size(), 0);
    for (const TrainOp& op : g.ops())
      if (op.kind == TrainOp::gradient || op.kind == TrainOp::param_grad)
        for (int i : op.inputs)
          read_by_backward[size_t(i)] = 1;
    std::vector<int> kept;
    for (int k : c) {
      int s = k;
      while (s != kModelInput && op_is_view(m.nodes[s].op))
        s = m.nodes[s].inputs[0];
      if (s != kModelInput && g.forward_op(s) >= 0 && read_by_backward[size_t(g.forward_op(s))])
        kept.push_back(k);
    }
    c = kept;
  }
  // Stage ranges from the cuts, merged to at most max_stages with balanced forward time.
  std::vector<std::pair<int, int>> ranges;
  int first = 0;
  for (int k : c)
    ranges.push_back({first, k}), first = k + 1;
  ranges.push_back({first, n - 1});
  auto stage_time = [&](std::pair<int, int> r) {
    double t = 0;
    for (int i = r.first; i <= r.second; ++i)
      if (g.forward_op(i) >= 0) t += times[g.forward_op(i)];
    return t;
  };
  if (int(ranges.size()) > max_stages) {
    double total = 0;
    for (auto r : ranges)
      total += stage_time(r);
    const double target = total / max_stages;
    std::vector<std::pair<int, int>> merged;
    double acc = 0;
    for (auto r : ranges) {
      if (!merged.empty() && acc + stage_time(r) <= target * 1.0001) {
        merged.back().second = r.second;
        acc += stage_time(r);
      } else {
        merged.push_back(r);
        acc = stage_time(r);
      }
    }
    while (int(merged.size()) > max_stages) { // coarsen further: pairwise
      std::vector<std::pair<int, int>> half;
      for (size_t i = 0; i < merged.size(); i += 2)
        half.push_back(i + 1 < merged.size() ? std::pair{merged[i].first, merged[i + 1].second}
                                             : merged[i]);
      merged = half;
    }
    ranges = merged;
  }

  ModelChain mc;
  mc.stages = ranges;
  const int L = int(ranges.size());
  // The op holding a stage output's forward value (its storage's F op), -1 for the input.
  auto value_op = [&](int node) {
    while (node != kModelInput && op_is_view(m.nodes[node].op))
      node = m.nodes[node].inputs[0];
    return node == kModelInput ? -1 : g.forward_op(node);
  };
  for (int s = 0; s < L; ++s) {
    auto [lo, hi] = ranges[s];
    std::vector<int> f, b;
    for (int i = lo; i <= hi; ++i)
      if (g.forward_op(i) >= 0) f.push_back(g.forward_op(i));
    if (s == L - 1) f.push_back(g.loss_op());
    for (int i = hi; i >= lo; --i) {
      if (g.gradient_op(i) >= 0 && (i != hi || s == L - 1)) b.push_back(g.gradient_op(i));
      if (g.param_grad_op(i) >= 0) b.push_back(g.param_grad_op(i));
    }
    if (s > 0 && g.gradient_op(ranges[s - 1].second) >= 0)
      b.push_back(g.gradient_op(ranges[s - 1].second));
    mc.forward_ops.push_back(f);
    mc.backward_ops.push_back(b);
  }
  // A tiled segment's backward runs right after the gradient of the segment's output.
  for (size_t j = 0; j < g.ops().size(); ++j) {
    if (g.ops()[j].kind != TrainOp::tiled_backward) continue;
    const int after = g.gradient_op(g.ops()[j].node);
    for (auto& b : mc.backward_ops)
      if (auto it = std::find(b.begin(), b.end(), after); it != b.end()) b.insert(it + 1, int(j));
  }

  // Sizes by simulation of each stage in each mode.
  const auto& ops = g.ops();
  auto bytes_of = [&](int op) { return op < 0 ? int64_t(0) : ops[op].output_bytes; };
  mc.chain.input_bytes = 0; // the model input is a persistent buffer
  for (int s = 0; s < L; ++s) {
    const int in = s == 0 ? -1 : value_op(ranges[s - 1].second);
    const int out = value_op(ranges[s].second);
    const int d_out = s + 1 < L ? g.gradient_op(ranges[s].second) : -1;
    const int d_in = s > 0 ? g.gradient_op(ranges[s - 1].second) : -1;
    std::set<int> start, keep_out;
    if (in >= 0) start.insert(in), keep_out.insert(in);
    if (out >= 0) keep_out.insert(out);
    // What the stage's backward reads of its own forward.
    std::set<int> needed;
    for (int j : mc.backward_ops[s])
      for (int i : ops[j].inputs)
        if (ops[i].kind == TrainOp::forward || ops[i].kind == TrainOp::loss) needed.insert(i);
    std::set<int> keep_all = keep_out;
    for (int i : needed)
      if (std::find(mc.forward_ops[s].begin(), mc.forward_ops[s].end(), i) !=
          mc.forward_ops[s].end())
        keep_all.insert(i);
    const int64_t in_bytes = bytes_of(in), out_bytes = bytes_of(out);
    const int64_t peak_none = simulate_peak(g, mc.forward_ops[s], start, keep_out) - in_bytes;
    std::set<int> saved_set;
    const int64_t peak_all =
        simulate_peak(g, mc.forward_ops[s], start, keep_all, &saved_set) - in_bytes;
    int64_t saved = 0;
    for (int i : saved_set)
      if (i != in) saved += ops[i].output_bytes;
    saved = std::max(saved, out_bytes);
    // Backward: everything saved, the input and the output gradient resident.
    std::set<int> bstart = saved_set;
    if (d_out >= 0) bstart.insert(d_out);
    std::set<int> bkeep;
    if (d_in >= 0) bkeep.insert(d_in);
    const int64_t d_out_bytes = bytes_of(d_out);
    const int64_t peak_b = simulate_peak(g, mc.backward_ops[s], bstart, bkeep);
    sched::Stage st;
    st.name = m.nodes[ranges[s].first].name +
              (ranges[s].first == ranges[s].second ? "" : ".." + m.nodes[ranges[s].second].name);
    st.forward_time = 0;
    for (int j : mc.forward_ops[s])
      st.forward_time += times[j];
    st.backward_time = 0;
    for (int j : mc.backward_ops[s])
      st.backward_time += times[j];
    st.output_bytes =
        std::max(out_bytes, s + 1 < L ? d_out_bytes : int64_t(0)); // d_i is sized like a_i
    st.saved_bytes = std::max(saved, st.output_bytes);
    st.forward_temp_bytes =
        std::max<int64_t>({0, peak_none - st.output_bytes, peak_all - st.saved_bytes});
    st.backward_temp_bytes =
        std::max<int64_t>(0, peak_b - (st.saved_bytes + in_bytes + d_out_bytes) -
                                 (s > 0 ? mc.chain.stages.back().output_bytes : 0));
    mc.chain.stages.push_back(st);
  }
  mc.chain.validate();
  return mc;
}

std::vector<int> chain_ops_order(const ModelChain& c, const std::vector<sched::ChainOp>& ops) {
  std::vector<int> order;
  for (const sched::ChainOp& op : ops) {
    if (op.kind == sched::ChainOp::free) continue;
    const auto& list = op.kind == sched::ChainOp::backward ? c.backward_ops[op.stage - 1]
                                                           : c.forward_ops[op.stage - 1];
    order.insert(order.end(), list.begin(), list.end());
  }
  return order;
}

} // namespace kiln
