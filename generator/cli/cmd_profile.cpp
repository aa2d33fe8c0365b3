// kiln profile (to be written).
#include "generator/cli/commands.hpp"

namespace kiln::cli {

void add_profile(CLI::App&) {}

} // namespace kiln::cli
