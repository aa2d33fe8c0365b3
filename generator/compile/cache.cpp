#include "generator/compile/cache.hpp"

#include "runtime/error.hpp"
#include "runtime/io/file.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <xxhash.h>

namespace kiln {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'k', 'i', 'l', 'n', 'c', 'a', 'c', '1'};

std::string hex64(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

} // namespace

std::string content_hash(std::string_view data) {
  return "xxh3:" + hex64(XXH3_64bits(data.data(), data.size()));
}

std::string cache_key(const std::vector<std::string>& parts) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_128bits_reset(st);
  for (const std::string& p : parts) {
    const uint64_t n = p.size();
    XXH3_128bits_update(st, &n, sizeof n); // length-prefixed: no ambiguity between parts
    XXH3_128bits_update(st, p.data(), p.size());
  }
  const XXH128_hash_t h = XXH3_128bits_digest(st);
  XXH3_freeState(st);
  return hex64(h.high64) + hex64(h.low64);
}

std::string KernelCache::default_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/kiln";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/kiln";
  return "/tmp/kiln-cache";
}

KernelCache::KernelCache(std::string dir) : dir_(dir.empty() ? default_dir() : std::move(dir)) {}

std::string KernelCache::path(const std::string& key) const {
  return dir_ + "/" + key.substr(0, 2) + "/" + key + ".entry";
}

// Entry file: magic, u64 header length, JSON header {hash, resources, log}, image bytes.
void KernelCache::put(const std::string& key, const CacheEntry& e) const {
  nlohmann::json h;
  h["hash"] = hex64(XXH3_64bits(e.image.data(), e.image.size()));
  h["size"] = e.image.size();
  h["resources"] = {{"registers", e.resources.registers}, {"spill_stores", e.resources.spill_stores},
                    {"spill_loads", e.resources.spill_loads}, {"stack_bytes", e.resources.stack_bytes},
                    {"shared_bytes", e.resources.shared_bytes}, {"found", e.resources.found}};
  h["log"] = e.log;
  const std::string header = h.dump();
  std::string data(kMagic, sizeof kMagic);
  const uint64_t n = header.size();
  data.append(reinterpret_cast<const char*>(&n), sizeof n);
  data += header;
  data.append(e.image.data(), e.image.size());
  std::error_code ec;
  fs::create_directories(fs::path(path(key)).parent_path(), ec);
  io::write_file_atomic(path(key), data);
}

namespace {

// The entry in an entry file's bytes, or why they are not one.
std::optional<CacheEntry> decode(const std::vector<std::byte>& bytes, std::string& why) {
  const char* d = reinterpret_cast<const char*>(bytes.data());
  if (bytes.size() < 16 || std::memcmp(d, kMagic, 8) != 0) return why = "bad header", std::nullopt;
  uint64_t n;
  std::memcpy(&n, d + 8, 8);
  if (n > bytes.size() - 16) return why = "truncated header", std::nullopt;
  try {
    const nlohmann::json h = nlohmann::json::parse(std::string_view(d + 16, n));
    CacheEntry e;
    e.image.assign(d + 16 + n, d + bytes.size());
    if (h.at("size").get<size_t>() != e.image.size()) return why = "size mismatch", std::nullopt;
    if (h.at("hash").get<std::string>() != hex64(XXH3_64bits(e.image.data(), e.image.size())))
      return why = "content hash mismatch", std::nullopt;
    const auto& r = h.at("resources");
    e.resources = {r.at("registers"),   r.at("spill_stores"), r.at("spill_loads"),
                   r.at("stack_bytes"), r.at("shared_bytes"), r.at("found")};
    e.log = h.at("log").get<std::string>();
    return e;
  } catch (const nlohmann::json::exception& x) {
    return why = x.what(), std::nullopt;
  }
}

// Every regular file under `dir` whose name `keep` accepts.
template <class Keep> std::vector<fs::path> files_under(const std::string& dir, Keep keep) {
  std::vector<fs::path> files;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return files;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file(ec) && keep(it->path().filename().string()))
      files.push_back(it->path());
  std::sort(files.begin(), files.end());
  return files;
}

bool is_entry(const std::string& name) { return name.ends_with(".entry"); }

} // namespace

std::optional<CacheEntry> KernelCache::get(const std::string& key, std::string* problem) const {
  const std::string p = path(key);
  std::error_code ec;
  if (!fs::exists(p, ec)) return std::nullopt;
  std::vector<std::byte> bytes;
  try {
    bytes = io::read_file(p);
  } catch (const Error&) {
    return std::nullopt; // removed by a concurrent `cache clear`
  }
  std::string why;
  std::optional<CacheEntry> e = decode(bytes, why);
  if (!e) {
    if (problem) *problem = cat("cache entry ", p, " is corrupt (", why, "); rebuilding it");
    fs::remove(p, ec);
  }
  return e;
}

io::FileLock KernelCache::lock(const std::string& key) const {
  std::error_code ec;
  fs::create_directories(fs::path(path(key)).parent_path(), ec);
  return io::FileLock::acquire(dir_ + "/" + key.substr(0, 2) + "/" + key + ".lock");
}

std::vector<KernelCache::Bad> KernelCache::verify(int64_t* entries) const {
  std::vector<Bad> bad;
  const std::vector<fs::path> files = files_under(dir_, is_entry);
  for (const fs::path& f : files) {
    std::string why;
    try {
      if (!decode(io::read_file(f.string()), why)) bad.push_back({f.string(), why});
    } catch (const Error& e) {
      std::error_code ec;
      if (fs::exists(f, ec)) bad.push_back({f.string(), e.message()}); // else: cleared meanwhile
    }
  }
  if (entries) *entries = int64_t(files.size());
  return bad;
}

CacheStats KernelCache::stats() const {
  CacheStats s;
  s.dir = dir_;
  std::error_code ec;
  for (const fs::path& f : files_under(dir_, is_entry)) {
    ++s.entries;
    s.bytes += int64_t(fs::file_size(f, ec));
  }
  return s;
}

int64_t KernelCache::clear() const {
  int64_t n = 0;
  std::error_code ec;
  // Entries, their locks, and the temporaries of writers that were killed before renaming.
  for (const fs::path& f : files_under(dir_, [](const std::string& name) {
         return is_entry(name) || name.ends_with(".lock") || name.find(".entry.tmp.") != name.npos;
       }))
    n += fs::remove(f, ec) && is_entry(f.filename().string()) ? 1 : 0;
  return n;
}

} // namespace kiln
