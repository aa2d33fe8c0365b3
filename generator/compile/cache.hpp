// The kernel cache: compiled images addressed by the hash of everything that determines
// them (source, options, architecture, compiler version, kiln version, templates and the
// GPU descriptor). One file per entry, written atomically (temporary name, then rename),
// so concurrent kiln processes — on one machine or sharing the cache on a cluster's file
// system — never see a partial entry; a key's lock lets one of them compile it while the
// others wait for the entry. An entry whose content hash does not match is reported,
// removed and rebuilt.
#pragma once

#include "generator/compile/resources.hpp"
#include "runtime/io/file_lock.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

struct CacheEntry {
  std::vector<char> image;
  Resources resources;
  std::string log;
};

struct CacheStats {
  int64_t entries = 0;
  int64_t bytes = 0;
  std::string dir;
};

class KernelCache {
public:
  // `dir` empty: $XDG_CACHE_HOME/kiln, else ~/.cache/kiln.
  explicit KernelCache(std::string dir = "");
  static std::string default_dir();

  // The entry, or nothing; a corrupt entry is removed and described in `problem`.
  std::optional<CacheEntry> get(const std::string& key, std::string* problem) const;
  void put(const std::string& key, const CacheEntry& e) const;

  // Held while a key is compiled: a second process that misses the same key waits here,
  // then finds the entry (get again) instead of compiling it too.
  io::FileLock lock(const std::string& key) const;

  // Every entry read back and checked against its recorded size and hash; the path and
  // problem of each that fails (nothing is removed).
  struct Bad {
    std::string path, problem;
  };
  std::vector<Bad> verify(int64_t* entries = nullptr) const;

  CacheStats stats() const;
  int64_t clear() const; // entries removed (their locks and stray temporaries go too)
  const std::string& dir() const { return dir_; }

private:
  std::string path(const std::string& key) const;
  std::string dir_;
};

// "xxh3:<16 hex>" of some content (manifest source hashes).
std::string content_hash(std::string_view data);

// A stable key: xxh3-128 of the parts, in hex.
std::string cache_key(const std::vector<std::string>& parts);

} // namespace kiln
