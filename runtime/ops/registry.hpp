// The tables of ops and step functions: every OpKind's OpDef and every Fn's FnDef, from the
// files of runtime/ops/ (one line each in registry.cpp).
#pragma once

#include "runtime/ops/fn_def.hpp"
#include "runtime/ops/op_def.hpp"

#include <span>
#include <vector>

namespace kiln {

// What one file of runtime/ops/ defines: its ops (none for the functions of no model op)
// and its functions.
struct OpFile {
  std::span<const OpDef> ops;
  std::span<const FnDef> fns;
};

const OpDef& op_def(OpKind op);
const FnDef& fn_def(Fn fn);

// Every definition as the files give them (in file order, duplicates included), for the
// registry's own test.
std::vector<const OpDef*> registered_ops();
std::vector<const FnDef*> registered_fns();

} // namespace kiln
