// kiln tune merge: databases of one GPU identity, kiln version and device (the shards of
// one sweep, or sweeps of several models) into one. A (shape, variant) measured in more than
// one keeps the faster median; databases that disagree on what they measured are refused.
#pragma once

#include "generator/tune/database.hpp"

#include <string>
#include <utility>
#include <vector>

namespace kiln {

struct MergeResult {
  TuningDb db;
  int conflicts = 0; // (shape, variant) pairs measured differently; the faster kept
};

// `inputs`: (file, database). Throws kiln::Error naming the first file whose GPU identity,
// kiln version or device differs from the first's.
MergeResult merge_tuning_dbs(const std::vector<std::pair<std::string, TuningDb>>& inputs);

} // namespace kiln
