// An advisory lock on a file, held while the object lives: how kiln processes sharing a
// directory (a kernel cache or a tuning database on a cluster's shared file system) take
// turns where two would otherwise do the same work or lose each other's writes.
//
// Open-file-description locks (fcntl F_OFD_SETLK): NFS carries them to the server like
// POSIX record locks, but unlike those they are not dropped when some other descriptor of
// the file is closed, and two threads of one process exclude each other. The kernel (or
// the NFS server, when a client dies) releases the lock with the process, so a killed kiln
// never leaves a stale lock behind. The lock file itself stays: removing it would race with
// a process about to lock it.
#pragma once

#include <optional>
#include <string>

namespace kiln::io {

class FileLock {
public:
  // Blocks until the lock on `path` (created if missing) is held. Throws kiln::Error naming
  // the file when it cannot be created or locked.
  static FileLock acquire(const std::string& path);
  // The lock if no one else holds it, else nothing.
  static std::optional<FileLock> try_acquire(const std::string& path);

  FileLock(FileLock&& o) noexcept : fd_(o.fd_), path_(std::move(o.path_)) { o.fd_ = -1; }
  FileLock& operator=(FileLock&& o) noexcept; // releases this one's lock, takes o's
  FileLock(const FileLock&) = delete;
  ~FileLock();

  const std::string& path() const { return path_; }

private:
  FileLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  static std::optional<FileLock> lock(const std::string& path, bool wait);
  int fd_;
  std::string path_;
};

} // namespace kiln::io
