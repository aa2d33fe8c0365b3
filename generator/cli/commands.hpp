// The kiln subcommands. Each registers itself on the app with its options and a callback;
// errors propagate as kiln::Error (exit 2) or CheckFailed (exit 1) to main.
#pragma once

#include <CLI/CLI.hpp>
#include <stdexcept>

namespace kiln::cli {

// A check the user asked for failed (exit code 1), as opposed to bad input (exit code 2).
class CheckFailed : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

void add_inspect(CLI::App& app);
void add_gpu(CLI::App& app);
void add_fold(CLI::App& app);
void add_run(CLI::App& app);
void add_generate(CLI::App& app);
void add_compile(CLI::App& app);
void add_cache(CLI::App& app);
void add_check(CLI::App& app);
void add_schedule(CLI::App& app);
void add_build(CLI::App& app);
void add_models(CLI::App& app);
void add_profile(CLI::App& app);
void add_train(CLI::App& app);
void add_bench(CLI::App& app);
void add_tune(CLI::App& app);
void add_import(CLI::App& app);

} // namespace kiln::cli
