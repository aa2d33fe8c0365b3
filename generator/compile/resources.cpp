#include "generator/compile/resources.hpp"

#include <regex>
#include <sstream>

namespace kiln {

Resources parse_ptxas_report(std::string_view log, std::string_view entry) {
  // ptxas prints, per entry:
  //   ptxas info    : Compiling entry function 'NAME' for 'sm_90'
  //   ptxas info    : Function properties for NAME
  //   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
  //   ptxas info    : Used 10 registers, used 0 barriers, 384 bytes smem, ...
  Resources r;
  std::istringstream in{std::string(log)};
  std::string line;
  bool in_entry = false;
  static const std::regex frame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex regs(R"(Used (\d+) registers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  while (std::getline(in, line)) {
    if (line.find("Compiling entry function") != std::string::npos)
      in_entry = line.find("'" + std::string(entry) + "'") != std::string::npos;
    if (!in_entry) continue;
    std::smatch m;
    if (std::regex_search(line, m, frame)) {
      r.stack_bytes = std::stoi(m[1]);
      r.spill_stores = std::stoi(m[2]);
      r.spill_loads = std::stoi(m[3]);
    }
    if (std::regex_search(line, m, regs)) {
      r.registers = std::stoi(m[1]);
      r.found = true;
      if (std::regex_search(line, m, smem)) r.shared_bytes = std::stoi(m[1]);
    }
  }
  return r;
}

} // namespace kiln
