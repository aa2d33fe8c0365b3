#include "generator/compile/host_pch.hpp"

#include "generator/compile/cache.hpp"
#include "generator/compile/process.hpp"
#include "generator/compile/templates.hpp"
#include "runtime/io/file.hpp"

#include <filesystem>
#include <string_view>
#include <unistd.h>

namespace kiln {

namespace {

std::optional<std::string> build(const std::string& cxx, const std::string& version,
                                 const std::vector<std::string>& flags,
                                 const std::string& include) {
  namespace fs = std::filesystem;
  // Every template the host compiler can read: the CUDA-only device API (common/*_cuda.cuh)
  // is what kiln.cuh includes for NVRTC and nvcc instead of the emulator's.
  std::string text = "// every kiln template, precompiled for the emulator's kernels\n";
  for (const char* name : template_headers().names) {
    const std::string_view n(name);
    if (n.ends_with(".cuh") && !n.ends_with("_cuda.cuh"))
      text += "#include \"" + std::string(n) + "\"\n";
  }
  std::string parts = version;
  for (const std::string& f : flags)
    parts += " " + f;
  const std::string name = "kiln_all-" + cache_key({parts, text}) + ".hpp";
  const std::string header = include + "/" + name, pch = header + ".gch";
  if (fs::exists(pch)) return name;
  io::write_file_atomic(header, text);
  const std::string tmp = pch + ".tmp." + std::to_string(getpid());
  std::vector<std::string> argv = {cxx, "-x", "c++-header"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {header, "-o", tmp});
  if (run_process(argv).exit_code != 0) {
    std::error_code ec;
    fs::remove(tmp, ec);
    return std::nullopt;
  }
  std::error_code ec;
  fs::rename(tmp, pch, ec);
  if (ec) fs::remove(tmp, ec);
  return fs::exists(pch) ? std::optional<std::string>(name) : std::nullopt;
}

} // namespace

std::optional<std::string> host_pch(const std::string& cxx, const std::string& version,
                                    const std::vector<std::string>& flags,
                                    const std::string& include) {
  try { // an optimisation: a file it cannot write leaves the kernels to compile as before
    return build(cxx, version, flags, include);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

} // namespace kiln
