// kiln cache: the kernel cache's size, a check of every entry, or clearing it
// (generator/compile/cache.hpp).
#include "generator/cli/commands.hpp"
#include "generator/cli/format.hpp"
#include "generator/compile/cache.hpp"

#include <fmt/format.h>

namespace kiln::cli {

void add_cache(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "cache", "the kernel cache: stats, verify or clear. Many kiln processes may share one "
               "(a cluster's shared file system): entries are renamed into place whole, and a "
               "key is compiled by one process while the others wait for it");
  cmd->require_subcommand(1);
  cmd->add_option("--cache-dir", *dir, "cache directory (default $XDG_CACHE_HOME/kiln)");
  cmd->add_subcommand("stats", "entries and size")->callback([dir] {
    const CacheStats s = KernelCache(*dir).stats();
    fmt::print("{}: {} entries, {}\n", s.dir, s.entries, human_bytes(s.bytes));
  });
  cmd->add_subcommand("verify", "read every entry back and check it against its recorded size "
                                "and hash; exit 1 naming each that fails (nothing is removed: "
                                "kiln drops and rebuilds a bad entry when it next reads it)")
      ->callback([dir] {
        const KernelCache c(*dir);
        int64_t entries = 0;
        const std::vector<KernelCache::Bad> bad = c.verify(&entries);
        for (const KernelCache::Bad& b : bad)
          fmt::print("{}: {}\n", b.path, b.problem);
        fmt::print("{}: {} entries, {} good, {} bad\n", c.dir(), entries,
                   entries - int64_t(bad.size()), bad.size());
        if (!bad.empty())
          throw CheckFailed(
              fmt::format("{} of {} cache entries fail their hash check", bad.size(), entries));
      });
  cmd->add_subcommand("clear", "remove every entry")->callback([dir] {
    const KernelCache c(*dir);
    fmt::print("{}: removed {} entries\n", c.dir(), c.clear());
  });
}

} // namespace kiln::cli
