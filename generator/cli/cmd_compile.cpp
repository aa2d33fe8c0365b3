// kiln compile: a generated directory's kernels compiled (generator/compile/compile_dir.hpp).
#include "generator/cli/commands.hpp"
#include "generator/compile/compile_dir.hpp"
#include "runtime/progress.hpp"

#include <fmt/format.h>

namespace kiln::cli {

namespace {

struct CompileArgs {
  std::string dir;
  std::string compiler = "nvrtc";
  int jobs = 0;
  std::string cache_dir;
  bool no_cache = false;
  std::string arch;
  bool no_sass = false;
};

} // namespace

void add_compile(CLI::App& app) {
  auto a = std::make_shared<CompileArgs>();
  CLI::App* cmd = app.add_subcommand(
      "compile", "compile a generated directory's kernels: nvrtc (in process, cubins), nvcc "
                 "(cubins and a fatbin) or host (a shared object for the emu backend); cached");
  cmd->add_option("DIR", a->dir, "directory written by kiln generate")->required();
  cmd->add_option("--compiler", a->compiler, "nvrtc (default), nvcc or host")
      ->check(CLI::IsMember({"nvrtc", "nvcc", "host"}));
  cmd->add_option("-j,--jobs", a->jobs, "parallel compiles (default: hardware threads)");
  cmd->add_option("--cache-dir", a->cache_dir, "kernel cache (default $XDG_CACHE_HOME/kiln)");
  cmd->add_flag("--no-cache", a->no_cache, "neither read nor write the cache");
  cmd->add_option("--arch", a->arch,
                  "compile for another architecture than the descriptor's (sm_75, ...)");
  cmd->add_flag("--no-sass", a->no_sass,
                "skip the SASS census (cuobjdump -sass of every kernel, ~0.4 s of CPU each, "
                "recorded in the manifest's compiled.sass where a disassembler is found)");
  cmd->callback([a] {
    CompileOptions o;
    o.compiler = a->compiler;
    o.jobs = a->jobs;
    o.cache_dir = a->cache_dir;
    o.use_cache = !a->no_cache;
    o.arch = a->arch;
    o.sass = !a->no_sass;
    o.progress = ProgressLine::stderr_is_terminal();
    const CompileSummary s = compile_dir(a->dir, o);
    for (const std::string& w : s.warnings)
      fmt::print(stderr, "kiln: warning: {}\n", w);
    fmt::print("compiled {} kernels with {} in {:.2f} s ({} compiled, {} from the cache{}): {}\n",
               s.kernels, a->compiler, s.seconds, s.compiled, s.cached,
               s.spilling ? fmt::format(", {} spilling", s.spilling) : "", s.output);
  });
}

} // namespace kiln::cli
