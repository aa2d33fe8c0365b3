#include "schedules/dag.hpp"
#include "schedules/chain.hpp" // kMaxTotalBytes

#include <cmath>
#include <stdexcept>

namespace kiln::sched {

namespace {

std::string where(const Dag& dag, size_t j) {
  std::string s = "dag op " + std::to_string(j);
  if (!dag.ops[j].name.empty()) s += " '" + dag.ops[j].name + "'";
  return s;
}

void check_bytes(const std::string& place, const char* field, int64_t v) {
  if (v < 0 || v > kMaxTotalBytes)
    throw std::invalid_argument(place + ": " + field + " must be in [0, 2^60], got " +
                                std::to_string(v));
}

void check_indices(const Dag& dag, const std::vector<int>& list, const char* field) {
  for (int j : list)
    if (j < 0 || size_t(j) >= dag.ops.size())
      throw std::invalid_argument(std::string("dag ") + field + ": no op " + std::to_string(j) +
                                  " (there are " + std::to_string(dag.ops.size()) + ")");
}

} // namespace

void Dag::validate() const {
  if (ops.size() > 10000000) throw std::invalid_argument("dag has more than 10^7 ops");
  int64_t total = 0;
  std::vector<size_t> seen_by(ops.size(), ops.size()); // detects repeated inputs
  for (size_t j = 0; j < ops.size(); ++j) {
    const DagOp& op = ops[j];
    const std::string place = where(*this, j);
    if (!std::isfinite(op.compute_time) || op.compute_time < 0)
      throw std::invalid_argument(place + ": compute_time must be finite and >= 0, got " +
                                  std::to_string(op.compute_time));
    check_bytes(place, "output_bytes", op.output_bytes);
    check_bytes(place, "temp_bytes", op.temp_bytes);
    for (int i : op.inputs) {
      if (i < 0 || size_t(i) >= j)
        throw std::invalid_argument(place + ": input " + std::to_string(i) +
                                    " is not an earlier op (ops must be in topological order)");
      if (seen_by[size_t(i)] == j)
        throw std::invalid_argument(place + ": input " + std::to_string(i) + " is repeated");
      seen_by[size_t(i)] = j;
    }
    total += op.output_bytes + op.temp_bytes; // each <= 2^60, total checked before growing
    if (total > kMaxTotalBytes)
      throw std::invalid_argument(place + ": sizes of the dag sum to more than 2^60 bytes");
  }
  check_indices(*this, outputs, "outputs");
  check_indices(*this, pinned, "pinned");
  for (int j : pinned)
    if (!ops[size_t(j)].inputs.empty())
      throw std::invalid_argument(where(*this, size_t(j)) +
                                  ": pinned ops are given, so they cannot have inputs");
}

} // namespace kiln::sched
