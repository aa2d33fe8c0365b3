#include "generator/emit/tensor_maps.hpp"

#include "generator/select/families/hopper/conv_wgmma.hpp"
#include "runtime/step_json.hpp"

#include <algorithm>
#include <map>

namespace kiln {

namespace {

// Makes each map's buffer and encode step once: maps of the same memory and shape are shared.
struct MapMaker {
  explicit MapMaker(Plan& plan) : p(plan) {}
  Plan& p;
  std::map<std::string, int> made; // a map's description (JSON) -> its buffer
  std::vector<Step> encodes;

  int buffer_for(const Step& s, const std::string& role, const TensorMapEncode& m) {
    Step key; // the map alone, not the node reading it
    key.fn = Fn::tensor_map_encode;
    key.params = m;
    const std::string text = step_to_json(key, p).dump();
    if (auto it = made.find(text); it != made.end()) return it->second;
    Buffer b;
    b.name = s.node + "." + role;
    for (int k = 2; p.find_buffer(b.name) >= 0; ++k)
      b.name = s.node + "." + role + "#" + std::to_string(k);
    b.shape = {128};
    b.dtype = DType::u8;
    b.role = BufferRole::derived;
    p.buffers.push_back(b);
    const int buf = int(p.buffers.size()) - 1;
    Step e;
    e.kind = StepKind::reference; // no kernel: each backend writes the 128 bytes itself
    e.fn = Fn::tensor_map_encode;
    e.node = s.node;
    e.op = s.op;
    e.attrs = s.attrs;
    e.params = m;
    e.args = {{"map", buf}};
    encodes.push_back(std::move(e));
    return made.emplace(text, buf).first->second;
  }

  void bind(Step& s, const Variant& v) {
    for (auto& [role, m] : hopper_conv_maps(v, p, s))
      s.args.push_back({role, buffer_for(s, role, m)});
  }

  // The encode steps open the prepare phase (made if the plan has none).
  void finish() {
    if (encodes.empty()) return;
    auto prep = std::find_if(p.phases.begin(), p.phases.end(),
                             [](const Phase& ph) { return ph.name == "prepare"; });
    if (prep == p.phases.end()) prep = p.phases.insert(p.phases.begin(), Phase{"prepare", {}});
    prep->steps.insert(prep->steps.begin(), encodes.begin(), encodes.end());
  }
};

bool is_tensor_map(const Plan& p, int buffer) {
  const Phase* prep = p.phase("prepare");
  return prep && std::any_of(prep->steps.begin(), prep->steps.end(), [&](const Step& e) {
           return e.fn == Fn::tensor_map_encode && e.arg("map") == buffer;
         });
}

} // namespace

int insert_tensor_maps(Plan& p, const Assigned& assigned) {
  MapMaker maker(p);
  for (Phase& ph : p.phases)
    for (Step& s : ph.steps)
      if (s.kind == StepKind::launch && s.kernel >= 0 &&
          is_hopper_conv(assigned.kernels[size_t(s.kernel)].variant))
        maker.bind(s, assigned.kernels[size_t(s.kernel)].variant);
  const int n = int(maker.encodes.size());
  maker.finish();
  return n;
}

Step without_tensor_maps(const Plan& p, const Step& s) {
  Step out = s;
  std::erase_if(out.args, [&](const Arg& a) { return is_tensor_map(p, a.buffer); });
  return out;
}

Step with_tensor_maps_of(Plan& p, const Step& s, const Variant& v) {
  Step out = without_tensor_maps(p, s);
  if (!is_hopper_conv(v)) return out;
  MapMaker maker(p);
  maker.bind(out, v);
  maker.finish();
  return out;
}

} // namespace kiln
