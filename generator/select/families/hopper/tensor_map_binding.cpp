#include "generator/select/families/hopper/tensor_map_binding.hpp"

#include "generator/select/families/hopper/conv_wgmma.hpp"
#include "runtime/step_json.hpp"

#include <algorithm>

namespace kiln {

int TensorMapBinder::buffer_for(const Step& s, const std::string& role, const TensorMapEncode& m) {
  Step key; // the map alone, not the node reading it
  key.fn = Fn::tensor_map_encode;
  key.params = m;
  const std::string text = step_to_json(key, p_).dump();
  if (auto it = made_.find(text); it != made_.end()) return it->second;
  Buffer b;
  b.name = s.node + "." + role;
  for (int k = 2; p_.find_buffer(b.name) >= 0; ++k)
    b.name = s.node + "." + role + "#" + std::to_string(k);
  b.shape = {128};
  b.dtype = DType::u8;
  b.role = BufferRole::derived;
  p_.buffers.push_back(b);
  const int buf = int(p_.buffers.size()) - 1;
  Step e;
  e.kind = StepKind::reference; // no kernel: each backend writes the 128 bytes itself
  e.fn = Fn::tensor_map_encode;
  e.node = s.node;
  e.op = s.op;
  e.attrs = s.attrs;
  e.params = m;
  e.args = {{"map", buf}};
  encodes_.push_back(std::move(e));
  return made_.emplace(text, buf).first->second;
}

void TensorMapBinder::bind(Step& s, const Variant& v) {
  if (!is_hopper_conv(v)) return;
  for (auto& [role, m] : hopper_conv_maps(v, p_, s))
    s.args.push_back({role, buffer_for(s, role, m)});
}

int TensorMapBinder::finish() {
  const int n = int(encodes_.size());
  if (n == 0) return 0;
  auto prep = std::find_if(p_.phases.begin(), p_.phases.end(),
                           [](const Phase& ph) { return ph.name == "prepare"; });
  if (prep == p_.phases.end()) prep = p_.phases.insert(p_.phases.begin(), Phase{"prepare", {}});
  prep->steps.insert(prep->steps.begin(), encodes_.begin(), encodes_.end());
  encodes_.clear();
  return n;
}

namespace {

bool is_tensor_map(const Plan& p, int buffer) {
  const Phase* prep = p.phase("prepare");
  return prep && std::any_of(prep->steps.begin(), prep->steps.end(), [&](const Step& e) {
           return e.fn == Fn::tensor_map_encode && e.arg("map") == buffer;
         });
}

} // namespace

Step without_tensor_maps(const Plan& p, const Step& s) {
  Step out = s;
  std::erase_if(out.args, [&](const Arg& a) { return is_tensor_map(p, a.buffer); });
  return out;
}

Step with_tensor_maps_of(Plan& p, const Step& s, const Variant& v) {
  Step out = without_tensor_maps(p, s);
  TensorMapBinder binder(p);
  binder.bind(out, v);
  binder.finish();
  return out;
}

} // namespace kiln
