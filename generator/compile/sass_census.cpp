#include "generator/compile/sass_census.hpp"

#include "generator/compile/process.hpp"
#include "runtime/error.hpp"

#include <cstdlib>
#include <filesystem>
#include <regex>

namespace kiln {

namespace fs = std::filesystem;

SassCensus parse_sass(std::string_view listing) {
  // An instruction line: "/*0090*/   @!P0 HMMA.16816.F32 R4, R8, R12, R4 ;". The opcode
  // is the first word after the address and an optional predicate.
  static const std::regex insn(
      R"(/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*)((?:\.[A-Z0-9_]+)*))");
  SassCensus c;
  const std::string text(listing);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), insn); it != std::sregex_iterator();
       ++it) {
    const std::string op = (*it)[1];
    ++c.instructions;
    if (op == "HMMA")
      ++c.hmma;
    else if (op == "HGMMA")
      ++c.hgmma;
    else if (op == "UTMALDG") {
      ++c.tma_loads;
      if ((*it)[2].str().find(".MULTICAST") != std::string::npos) ++c.tma_multicasts;
    } else if (op == "LDL")
      ++c.local_loads;
    else if (op == "STL")
      ++c.local_stores;
    else if (op == "MEMBAR" && (*it)[2].str().find(".GPU") != std::string::npos)
      ++c.gpu_fences;
  }
  return c;
}

namespace {

bool runs(const std::string& tool) {
  return !tool.empty() && run_process({tool, "--version"}).exit_code == 0;
}

std::string find_cuobjdump() {
  if (const char* e = std::getenv("KILN_CUOBJDUMP"); e && *e) return runs(e) ? e : "";
  const char* home = std::getenv("CUDA_HOME");
  const std::string in_toolkit =
      std::string(home && *home ? home : "/usr/local/cuda") + "/bin/cuobjdump";
  if (fs::exists(in_toolkit) && runs(in_toolkit)) return in_toolkit;
  return runs("cuobjdump") ? "cuobjdump" : "";
}

} // namespace

const std::string& cuobjdump_path() {
  static const std::string path = find_cuobjdump();
  return path;
}

std::optional<SassCensus> sass_census(const std::string& cubin) {
  const std::string& tool = cuobjdump_path();
  if (tool.empty()) return std::nullopt;
  // cuobjdump runs nvdisasm from PATH: the one beside it first (the PyPI packages' bin/).
  std::vector<std::string> argv = {tool, "-sass", cubin};
  const fs::path dir = fs::path(tool).parent_path();
  if (!dir.empty() && fs::exists(dir / "nvdisasm")) {
    const char* path = std::getenv("PATH");
    argv.insert(argv.begin(),
                {"env", "PATH=" + dir.string() + (path ? ":" + std::string(path) : "")});
  }
  const ProcessResult r = run_process(argv);
  if (r.exit_code != 0)
    throw Error(cubin, "", cat(tool, " -sass exited with ", r.exit_code, ": ", r.output));
  return parse_sass(r.output);
}

} // namespace kiln
