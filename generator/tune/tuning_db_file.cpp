#include "generator/tune/tuning_db_file.hpp"

#include "runtime/error.hpp"
#include "runtime/io/file_lock.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <tuple>

namespace kiln {

TuningDbFile::TuningDbFile(std::string path, const GpuDesc& g, const std::string& device)
    : path_(std::move(path)), db_(empty_tuning_db(g, device)) {
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) return;
  std::optional<TuningDb> old;
  try {
    old = load_tuning_db(path_);
  } catch (const Error& e) {
    replaced_ = e.what();
  }
  if (old && old->identity_text() != db_.identity_text())
    throw Error(path_, "",
                cat("holds measurements of ", old->identity_text(), ", not ", db_.identity_text(),
                    ": name another file with --db"));
  if (old) db_ = std::move(*old);
}

bool TuningDbFile::holds(const std::string& key, const std::string& variant) const {
  const auto& ms = db_.measurements; // sorted by (key, variant)
  const auto it = std::lower_bound(
      ms.begin(), ms.end(), std::tie(key, variant),
      [](const Measurement& m, const auto& kv) { return std::tie(m.key, m.variant) < kv; });
  return it != ms.end() && it->key == key && it->variant == variant;
}

// Read every time (a parse per measurement, small beside a measurement): a file's identity
// cannot tell reliably whether another writer saved, as inodes are reused.
void TuningDbFile::refresh() {
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) return;
  try {
    TuningDb theirs = load_tuning_db(path_);
    if (theirs.identity_text() == db_.identity_text())
      for (Measurement& m : theirs.measurements)
        db_.add(std::move(m));
  } catch (const Error&) {
    // Not a database (someone wrote over it): ours replaces it, as on opening.
  }
}

void TuningDbFile::add(Measurement m) {
  const std::filesystem::path parent = std::filesystem::path(path_).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  const io::FileLock lock = io::FileLock::acquire(path_ + ".lock");
  refresh();
  db_.add(std::move(m));
  save_tuning_db(db_, path_);
}

} // namespace kiln
