#include "generator/model/onnx/graph_order.hpp"

#include "generator/model/onnx/node_attrs.hpp"
#include "runtime/error.hpp"

#include <map>
#include <queue>

namespace kiln::onnx_import {

std::vector<int> node_order(const onnx::GraphProto& g, const std::set<std::string>& available) {
  const int n = g.node_size();
  std::map<std::string, int> producer;
  for (int i = 0; i < n; ++i)
    for (const std::string& o : g.node(i).output()) {
      if (o.empty()) continue;
      if (available.count(o) || !producer.emplace(o, i).second)
        throw Error("", node_label(g.node(i)), cat("value \"", o, "\" is produced twice"));
    }
  std::vector<std::vector<int>> deps(n), users(n);
  std::vector<int> pending(n, 0);
  for (int i = 0; i < n; ++i)
    for (const std::string& in : g.node(i).input()) {
      if (in.empty() || available.count(in)) continue; // "" marks an omitted optional input
      auto it = producer.find(in);
      if (it == producer.end())
        throw Error("", node_label(g.node(i)),
                    cat("input \"", in,
                        "\" is not produced by any node and is neither an initializer nor a "
                        "graph input (a missing initializer?)"));
      deps[i].push_back(it->second);
      users[it->second].push_back(i);
      ++pending[i];
    }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<int> order;
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int u : users[i])
      if (--pending[u] == 0) ready.push(u);
  }
  if (int(order.size()) == n) return order;
  // Every node left waits on another left: walk dependencies until one repeats.
  int cur = 0;
  while (pending[cur] == 0)
    ++cur;
  std::vector<int> seen(n, -1), path;
  while (seen[cur] < 0) {
    seen[cur] = int(path.size());
    path.push_back(cur);
    for (int d : deps[cur])
      if (pending[d] > 0) {
        cur = d;
        break;
      }
  }
  std::string cycle;
  for (size_t k = size_t(seen[cur]); k < path.size(); ++k)
    cycle = node_label(g.node(path[k])) + (cycle.empty() ? "" : " -> ") + cycle;
  throw Error("", "graph", cat("the nodes form a cycle: ", cycle, " -> ", node_label(g.node(cur))));
}

} // namespace kiln::onnx_import
