// The registry of template families, in selection tie-break order. Each group of families
// lives in its own folder under families/ and lists itself in its group function.
#include "generator/select/families/elementwise.hpp"
#include "generator/select/families/groups.hpp"
#include "generator/select/family.hpp"

#include <algorithm>

namespace kiln {

std::vector<Variant> step_candidates(const Family& f, const StepInfo& s) {
  std::vector<Variant> out = f.candidates(s);
  if (s.has("gate"))
    std::erase_if(out, [](const Variant& v) {
      return std::find(v.args.begin(), v.args.end(), "gate") == v.args.end();
    });
  // A pitched view (Buffer::view_pitch): only a kernel compiled for its pitch, in its layout.
  for (const Arg& a : s.step.args) {
    const Buffer& b = s.plan.buffers[size_t(a.buffer)];
    if (b.view_pitch > 0)
      std::erase_if(out, [&](const Variant& v) {
        if (std::find(v.pitched.begin(), v.pitched.end(), a.role) == v.pitched.end()) return true;
        for (const auto& [role, layout] : v.layouts)
          if (role == a.role && layout != b.layout) return true;
        return false;
      });
  }
  // A tf32 buffer it writes (Buffer::tf32): only a kernel that rounds what it stores.
  bool writes_tf32 = false;
  for (const Arg& a : s.step.args)
    writes_tf32 |= fn_writes(s.step.fn, a.role) && s.plan.buffers[size_t(a.buffer)].tf32;
  if (writes_tf32)
    std::erase_if(out, [](const Variant& v) {
      for (const CfgEntry& e : v.cfg)
        if ((e.name == "ROUND_TF32" || e.name == "Y_TF32") && std::holds_alternative<bool>(e.value))
          return !std::get<bool>(e.value);
      return true;
    });
  return out;
}

const std::vector<const Family*>& all_families() {
  static const std::vector<const Family*> all = [] {
    static const ElementwiseFamily elementwise;
    static const ConvertFamily convert;
    static const RegionCopyFamily region_copy;
    std::vector<const Family*> r;
    for (auto group : {hopper_families, implicit_gemm_families, conv_families, spatial_families,
                       dense_families, sparse_families})
      for (const Family* f : group())
        r.push_back(f);
    r.push_back(&elementwise);
    r.push_back(&convert);
    r.push_back(&region_copy);
    return r;
  }();
  return all;
}

} // namespace kiln
