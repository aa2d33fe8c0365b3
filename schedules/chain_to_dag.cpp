#include "schedules/chain_to_dag.hpp"

namespace kiln::sched {

Dag chain_to_dag(const Chain& chain) {
  chain.validate();
  const int L = chain.length();
  Dag dag;
  dag.ops.push_back({"a0", 0, chain.input_bytes, {}});
  dag.pinned = {0};
  std::vector<int> act{0}, rest(size_t(L + 1), -1); // op producing a_i, the rest of abar_i
  for (int i = 1; i <= L; ++i) {
    const Stage& s = chain.stage(i);
    act.push_back(int(dag.ops.size()));
    dag.ops.push_back({"F" + std::to_string(i),
                       s.forward_time,
                       s.output_bytes,
                       {act[size_t(i - 1)]},
                       s.forward_temp_bytes});
    if (s.saved_bytes > s.output_bytes) {
      rest[size_t(i)] = int(dag.ops.size());
      dag.ops.push_back({"S" + std::to_string(i),
                         s.forward_time,
                         s.saved_bytes - s.output_bytes,
                         {act[size_t(i - 1)]},
                         s.forward_temp_bytes});
    }
  }
  int grad = -1; // op producing d_i for the current i
  for (int i = L; i >= 1; --i) {
    const Stage& s = chain.stage(i);
    std::vector<int> in{act[size_t(i - 1)], act[size_t(i)]};
    if (rest[size_t(i)] >= 0) in.push_back(rest[size_t(i)]);
    if (grad >= 0) in.push_back(grad);
    grad = int(dag.ops.size());
    dag.ops.push_back({"B" + std::to_string(i), s.backward_time, chain.gradient_bytes(i - 1),
                       std::move(in), s.backward_temp_bytes});
  }
  dag.outputs = {grad};
  return dag;
}

} // namespace kiln::sched
