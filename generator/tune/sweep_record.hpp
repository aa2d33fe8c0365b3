// A sweep's measurements into a tuning database (kiln tune): the database at a path, or a
// new one for the sweep's GPU and device, and every checked variant of the sweep added to it.
#pragma once

#include "generator/tune/database.hpp"
#include "generator/tune/sweep_dir.hpp"

#include <string>

namespace kiln {

// The database at `path` when it holds the same GPU identity, kiln version and device; a new
// one when there is no file, or when the file is not a tuning database (then `replaced`
// says why). A database of another identity is a kiln::Error naming the file.
TuningDb open_tuning_db(const std::string& path, const GpuDesc& g, const std::string& device,
                        std::string* replaced);

// Adds the sweep's checked variants (failed checks are left out); returns how many.
size_t record_sweep(TuningDb& db, const SweepResult& r);

} // namespace kiln
