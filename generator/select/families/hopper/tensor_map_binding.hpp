// Binding a Hopper kernel's TMA tensor maps to its step (DESIGN.md 4.4): per map a 128-byte
// derived buffer, written by a tensor_map.encode step of the prepare phase (the arena's
// addresses are fixed once it is allocated, so a map is written once per binding), bound to
// the step under the role its kernel argument names (xmap0.., wmap). Used by generate for
// the chosen kernels and by kiln bench/tune for every variant they sweep.
#pragma once

#include "generator/select/variant.hpp"
#include "runtime/plan.hpp"

#include <map>
#include <string>
#include <vector>

namespace kiln {

// Binds maps to steps of one plan; maps of the same memory and shape are written once.
class TensorMapBinder {
public:
  explicit TensorMapBinder(Plan& p) : p_(p) {}
  // Adds to s the arguments of the maps variant v reads (none where v is no Hopper kernel).
  void bind(Step& s, const Variant& v);
  // Puts the encode steps made at the start of the prepare phase (made if the plan has
  // none); returns how many.
  int finish();

private:
  int buffer_for(const Step& s, const std::string& role, const TensorMapEncode& m);
  Plan& p_;
  std::map<std::string, int> made_; // a map's description (JSON) -> its buffer
  std::vector<Step> encodes_;
};

// Step s as its layer is before kernel assignment: without the maps bound to it (what
// selection and the tuning key see; kiln bench and tune sweep from a finished plan).
Step without_tensor_maps(const Plan& p, const Step& s);

// Step s bound to the maps variant v reads instead of those of the kernel chosen for it
// (none where v is no Hopper kernel): their buffers and encode steps are added to p. A
// sweep checks and times each variant through it.
Step with_tensor_maps_of(Plan& p, const Step& s, const Variant& v);

} // namespace kiln
