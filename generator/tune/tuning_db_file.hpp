// A tuning database file that kiln tune adds to one measurement at a time, as each
// completes: a sweep killed part way keeps everything it finished, and its rerun skips
// that. Several processes may add to one file at once (shards sharing the GPU's default
// database in a shared cache): each save happens under the file's lock (`<path>.lock`)
// after reading back what the others saved, and replaces the file atomically.
#pragma once

#include "generator/tune/database.hpp"

#include <string>

namespace kiln {

class TuningDbFile {
public:
  // The database at `path` when it holds the same GPU identity, kiln version and device; a
  // new one when there is no file, or when the file is not a tuning database (replaced()
  // says why; the first add overwrites it). A database of another identity is a
  // kiln::Error naming the file.
  TuningDbFile(std::string path, const GpuDesc& g, const std::string& device);

  const TuningDb& db() const { return db_; }
  const std::string& path() const { return path_; }
  const std::string& replaced() const { return replaced_; }
  // Whether the file (as last read or written here) measures this variant of this shape.
  bool holds(const std::string& key, const std::string& variant) const;
  // Adds m (the faster median of two measurements of one variant kept) and saves.
  void add(Measurement m);

private:
  // What other writers saved since, added in (under the lock).
  void refresh();

  std::string path_;
  TuningDb db_;
  std::string replaced_;
};

} // namespace kiln
