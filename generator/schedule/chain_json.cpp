#include "generator/schedule/chain_json.hpp"

#include "runtime/error.hpp"
#include "runtime/io/file.hpp"
#include "runtime/json_util.hpp"

#include <stdexcept>

namespace kiln {

sched::Chain load_chain(const std::string& path) {
  const auto bytes = io::read_file(path);
  const std::string text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  namespace ju = json_util;
  try {
    const nlohmann::json j = ju::parse(text, path);
    ju::expect_object(j, "");
    ju::reject_unknown_keys(j, "", {"format", "input_bytes", "stages"});
    const std::string f = ju::get_string(ju::require(j, "format", ""), "/format");
    if (f != "kiln-chain/1") throw Error("", "/format", cat("unsupported format \"", f, "\" (kiln-chain/1)"));
    sched::Chain c;
    c.input_bytes = ju::get_int(ju::require(j, "input_bytes", ""), "/input_bytes");
    const nlohmann::json& st = ju::require(j, "stages", "");
    ju::expect_array(st, "/stages");
    if (st.empty()) throw Error("", "/stages", "a chain needs at least one stage");
    if (st.size() > 100000) throw Error("", "/stages", "absurdly many stages");
    for (size_t i = 0; i < st.size(); ++i) {
      const std::string p = ju::child("/stages", i);
      ju::expect_object(st[i], p);
      ju::reject_unknown_keys(st[i], p, {"name", "forward_time", "backward_time", "output_bytes", "saved_bytes",
                                         "forward_temp_bytes", "backward_temp_bytes"});
      sched::Stage s;
      s.name = st[i].contains("name") ? ju::get_string(st[i]["name"], p + "/name") : "stage" + std::to_string(i + 1);
      s.forward_time = ju::get_number(ju::require(st[i], "forward_time", p), p + "/forward_time");
      s.backward_time = ju::get_number(ju::require(st[i], "backward_time", p), p + "/backward_time");
      s.output_bytes = ju::get_int(ju::require(st[i], "output_bytes", p), p + "/output_bytes");
      s.saved_bytes = ju::get_int(ju::require(st[i], "saved_bytes", p), p + "/saved_bytes");
      s.forward_temp_bytes = st[i].contains("forward_temp_bytes") ? ju::get_int(st[i]["forward_temp_bytes"], p + "/forward_temp_bytes") : 0;
      s.backward_temp_bytes = st[i].contains("backward_temp_bytes") ? ju::get_int(st[i]["backward_temp_bytes"], p + "/backward_temp_bytes") : 0;
      c.stages.push_back(s);
    }
    try {
      c.validate();
    } catch (const std::invalid_argument& e) {
      throw Error("", "/stages", e.what());
    }
    return c;
  } catch (const Error& e) {
    throw e.in_file(path);
  }
}

nlohmann::ordered_json chain_to_json(const sched::Chain& c) {
  nlohmann::ordered_json j;
  j["format"] = "kiln-chain/1";
  j["input_bytes"] = c.input_bytes;
  j["stages"] = nlohmann::ordered_json::array();
  for (const sched::Stage& s : c.stages)
    j["stages"].push_back({{"name", s.name}, {"forward_time", s.forward_time}, {"backward_time", s.backward_time},
                           {"output_bytes", s.output_bytes}, {"saved_bytes", s.saved_bytes},
                           {"forward_temp_bytes", s.forward_temp_bytes}, {"backward_temp_bytes", s.backward_temp_bytes}});
  return j;
}

} // namespace kiln
