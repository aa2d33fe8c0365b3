#include "generator/compile/nvrtc.hpp"

#include "generator/compile/templates.hpp"
#include "runtime/error.hpp"

#include <nvrtc.h>

namespace kiln {

namespace {

void check(nvrtcResult r, const char* what) {
  if (r != NVRTC_SUCCESS) throw Error("", "nvrtc", cat(what, ": ", nvrtcGetErrorString(r)));
}

} // namespace

std::string nvrtc_version() {
  int major = 0, minor = 0;
  check(nvrtcVersion(&major, &minor), "nvrtcVersion");
  return cat(major, ".", minor);
}

CompileOutput nvrtc_compile(const std::string& source, const std::string& file_name,
                            const std::string& entry, const std::string& arch) {
  const TemplateHeaders& h = template_headers();
  nvrtcProgram prog = nullptr;
  check(nvrtcCreateProgram(&prog, source.c_str(), file_name.c_str(), int(h.names.size()),
                           h.contents.data(), h.names.data()),
        "nvrtcCreateProgram");
  const std::string arch_opt = "--gpu-architecture=" + arch;
  const char* opts[] = {arch_opt.c_str(), "-std=c++17", "--ptxas-options=-v", "-default-device",
                        "--extra-device-vectorization"};
  CompileOutput out;
  const nvrtcResult r = nvrtcCompileProgram(prog, int(std::size(opts)), opts);
  size_t n = 0;
  nvrtcGetProgramLogSize(prog, &n);
  out.log.resize(n);
  if (n) nvrtcGetProgramLog(prog, out.log.data());
  while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n')) out.log.pop_back();
  if (r == NVRTC_SUCCESS) {
    size_t size = 0;
    check(nvrtcGetCUBINSize(prog, &size), "nvrtcGetCUBINSize");
    out.image.resize(size);
    check(nvrtcGetCUBIN(prog, out.image.data()), "nvrtcGetCUBIN");
    out.ok = true;
    out.resources = parse_ptxas_report(out.log, entry);
  }
  nvrtcDestroyProgram(&prog);
  return out;
}

} // namespace kiln
