// Whole-file reads and atomic writes. Readers get errors naming the file; writers never leave
// a half-written file at the destination (write a temporary, then rename over).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::io {

// Files larger than this are refused rather than allocated.
inline constexpr uint64_t max_file_size = uint64_t(64) << 30;

// The whole file. Throws kiln::Error(path, "", ...) when it is missing, unreadable, a
// directory or larger than max_file_size.
std::vector<std::byte> read_file(const std::string& path);

// A file written under a temporary name in the destination's directory
// (`<path>.tmp.<pid>.<counter>`) and renamed to `path` by commit(). Destroyed uncommitted
// (an exception, an early return), it removes the temporary and `path` is untouched.
class AtomicFile {
public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::span<const std::byte> data);
  void write(std::string_view data) { write(std::as_bytes(std::span(data))); }
  // Closes the temporary and renames it to the destination.
  void commit();

  const std::string& temp_path() const { return temp_; }

private:
  void discard() noexcept;
  std::string path_, temp_;
  int fd_ = -1;
  bool committed_ = false;
};

void write_file_atomic(const std::string& path, std::span<const std::byte> data);
void write_file_atomic(const std::string& path, std::string_view data);

} // namespace kiln::io
