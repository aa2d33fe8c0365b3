// kiln cache: the kernel cache's size, or clearing it (generator/compile/cache.hpp).
#include "generator/cli/commands.hpp"
#include "generator/cli/format.hpp"
#include "generator/compile/cache.hpp"

#include <fmt/format.h>

namespace kiln::cli {

void add_cache(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("cache", "the kernel cache: stats or clear");
  cmd->require_subcommand(1);
  cmd->add_option("--cache-dir", *dir, "cache directory (default $XDG_CACHE_HOME/kiln)");
  cmd->add_subcommand("stats", "entries and size")->callback([dir] {
    const CacheStats s = KernelCache(*dir).stats();
    fmt::print("{}: {} entries, {}\n", s.dir, s.entries, human_bytes(s.bytes));
  });
  cmd->add_subcommand("clear", "remove every entry")->callback([dir] {
    const KernelCache c(*dir);
    fmt::print("{}: removed {} entries\n", c.dir(), c.clear());
  });
}

} // namespace kiln::cli
