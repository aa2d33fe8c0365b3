// kiln: ahead-of-time CUDA kernel generator for convolutional networks.
#include "generator/cli/commands.hpp"
#include "generator/compile/compile_dir.hpp"
#include "runtime/error.hpp"

#include <cstdio>
#include <fmt/format.h>

int main(int argc, char** argv) {
  CLI::App app{"kiln " KILN_VERSION
               ": ahead-of-time CUDA kernel generator for convolutional networks.\n"
               "Reads a model (kiln-model/1 JSON or ONNX) and a GPU descriptor (kiln-gpu/1), emits "
               "kernels specialized to each layer and GPU, and runs whole networks.\n"
               "Example: kiln inspect resnet18; kiln run resnet18 --input x.npy --output y.npy",
               "kiln"};
  app.set_version_flag("--version", "kiln " KILN_VERSION);
  app.require_subcommand(1);
  app.fallthrough();
  kiln::cli::add_inspect(app);
  kiln::cli::add_models(app);
  kiln::cli::add_gpu(app);
  kiln::cli::add_import(app);
  kiln::cli::add_fold(app);
  kiln::cli::add_generate(app);
  kiln::cli::add_compile(app);
  kiln::cli::add_cache(app);
  kiln::cli::add_check(app);
  kiln::cli::add_schedule(app);
  kiln::cli::add_build(app);
  kiln::cli::add_run(app);
  kiln::cli::add_profile(app);
  kiln::cli::add_train(app);
  kiln::cli::add_bench(app);
  kiln::cli::add_tune(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "kiln: error: {}\n(run with --help for usage)\n", e.what());
    return 2;
  } catch (const kiln::CompileFailed& e) {
    fmt::print(stderr, "kiln: compile failed:\n{}", e.what());
    return 1;
  } catch (const kiln::cli::CheckFailed& e) {
    fmt::print(stderr, "kiln: check failed: {}\n", e.what());
    return 1;
  } catch (const kiln::cli::Stopped& e) {
    fmt::print(stderr, "kiln: stopped: {}\n", e.what());
    return 128 + e.signal;
  } catch (const kiln::Error& e) {
    fmt::print(stderr, "kiln: error: {}\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "kiln: error: out of memory\n");
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "kiln: internal error: {}\n", e.what());
    return 3;
  }
  return 0;
}
