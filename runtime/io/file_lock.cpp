#include "runtime/io/file_lock.hpp"

#include "runtime/error.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace kiln::io {

std::optional<FileLock> FileLock::lock(const std::string& path, bool wait) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) throw Error(path, "", cat("cannot create lock file: ", std::strerror(errno)));
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET; // l_start = l_len = 0: the whole file
  for (;;) {
    if (::fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl) == 0) return FileLock(fd, path);
    const int err = errno;
    if (err == EINTR) continue; // a signal (kiln tune's SIGTERM) while waiting: wait on
    ::close(fd);
    if (!wait && (err == EAGAIN || err == EACCES)) return std::nullopt;
    throw Error(path, "", cat("cannot lock: ", std::strerror(err)));
  }
}

FileLock FileLock::acquire(const std::string& path) { return *lock(path, true); }

std::optional<FileLock> FileLock::try_acquire(const std::string& path) { return lock(path, false); }

FileLock& FileLock::operator=(FileLock&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    path_ = std::move(o.path_);
    o.fd_ = -1;
  }
  return *this;
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_); // closing the last descriptor of the description unlocks
}

} // namespace kiln::io
