// The kiln subcommands. Each registers itself on the app with its options and a callback;
// errors propagate as kiln::Error (exit 2), CheckFailed (exit 1) or Stopped to main.
#pragma once

#include <CLI/CLI.hpp>
#include <stdexcept>
#include <string>

namespace kiln::cli {

// A check the user asked for failed (exit code 1), as opposed to bad input (exit code 2).
class CheckFailed : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// A signal (SIGTERM, SIGINT) stopped the command after it saved its work: exit 128 + the
// signal, as a shell reports a process that signal killed, so a batch system sees the job
// as not completed.
class Stopped : public std::runtime_error {
public:
  Stopped(int sig, const std::string& what) : std::runtime_error(what), signal(sig) {}
  int signal;
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
