// Every node an import cannot convert, gathered so that one run reports them all: grouped by
// operator (an unsupported operator once, with its nodes; any other problem per node), then
// what kiln imports. A node whose input comes from a failed node is not converted (its own
// problems cannot be known) and is not reported, unless its operator is unsupported.
#pragma once

#include "runtime/error.hpp"

#include <onnx/onnx_pb.h> // needs ONNX_ML=1: Debian ships the -ml variant only

#include <map>
#include <string>
#include <vector>

namespace kiln::onnx_import {

class ImportProblems {
public:
  // An operator (or domain) kiln does not import.
  void unsupported(const onnx::NodeProto& n, std::string why);
  // A supported operator's node that failed (an attribute, an input kiln cannot take).
  void failed(const onnx::NodeProto& n, const Error& e);
  bool empty() const { return count_ == 0; }
  // One problem: its own error, as a single failure always read. Several: the grouped report.
  // `nodes`: the graph's node count; `supported`: what kiln imports.
  Error error(int nodes, const std::string& supported) const;

private:
  struct Group {
    std::string unsupported;          // why the operator is refused ("" when it is supported)
    std::vector<std::string> names;   // its unsupported nodes' names
    std::vector<std::string> details; // its failed nodes' messages
  };
  std::map<std::string, Group> groups_; // by operator ("domain:Op" outside the default)
  int count_ = 0;
  std::vector<Error> first_; // the first problem, as its own error
  bool first_unsupported_ = false;
};

} // namespace kiln::onnx_import
