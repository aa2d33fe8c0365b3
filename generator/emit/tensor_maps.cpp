#include "generator/emit/tensor_maps.hpp"

#include "generator/select/families/hopper/conv_wgmma.hpp"
#include "runtime/step_json.hpp"

#include <algorithm>
#include <map>

namespace kiln {

int insert_tensor_maps(Plan& p, const Assigned& assigned) {
  std::vector<Step> encodes;
  std::map<std::string, int> made; // a map's description (JSON) -> its buffer
  for (Phase& ph : p.phases)
    for (Step& s : ph.steps) {
      if (s.kind != StepKind::launch || s.kernel < 0 ||
          !is_hopper_conv(assigned.kernels[size_t(s.kernel)].variant))
        continue;
      const Variant& v = assigned.kernels[size_t(s.kernel)].variant;
      for (auto& [role, m] : hopper_conv_maps(v, p, s)) {
        Step e;
        e.kind = StepKind::reference; // no kernel: each backend writes the 128 bytes itself
        e.fn = Fn::tensor_map_encode;
        e.node = s.node;
        e.op = s.op;
        e.attrs = s.attrs;
        e.params = m;
        Step k; // the key: the map alone, not the node reading it
        k.fn = e.fn;
        k.params = m;
        const std::string key = step_to_json(k, p).dump();
        auto it = made.find(key);
        if (it == made.end()) {
          Buffer b;
          b.name = s.node + "." + role;
          for (int k = 2; p.find_buffer(b.name) >= 0; ++k)
            b.name = s.node + "." + role + "#" + std::to_string(k);
          b.shape = {128};
          b.dtype = DType::u8;
          b.role = BufferRole::derived;
          p.buffers.push_back(b);
          const int buf = int(p.buffers.size()) - 1;
          e.args = {{"map", buf}};
          encodes.push_back(std::move(e));
          it = made.emplace(key, buf).first;
        }
        s.args.push_back({role, it->second});
      }
    }
  if (encodes.empty()) return 0;
  auto prep = std::find_if(p.phases.begin(), p.phases.end(),
                           [](const Phase& ph) { return ph.name == "prepare"; });
  if (prep == p.phases.end()) prep = p.phases.insert(p.phases.begin(), Phase{"prepare", {}});
  prep->steps.insert(prep->steps.begin(), encodes.begin(), encodes.end());
  return int(encodes.size());
}

} // namespace kiln
