#include "runtime/io/file.hpp"

#include "runtime/error.hpp"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln::io {
namespace {

// strerror text in the project's lowercase message style.
std::string errno_text(int err) {
  std::string s = std::strerror(err);
  if (!s.empty() && s[0] >= 'A' && s[0] <= 'Z') s[0] = char(s[0] - 'A' + 'a');
  return s;
}

// Closes a descriptor on scope exit (read_file's error paths).
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

} // namespace

std::vector<std::byte> read_file(const std::string& path) {
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) throw Error(path, "", cat("cannot open: ", errno_text(errno)));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) throw Error(path, "", cat("cannot stat: ", errno_text(errno)));
  if (S_ISDIR(st.st_mode)) throw Error(path, "", "is a directory, not a file");
  // Regular files are read to their stat size; pipes and devices until end of file.
  const bool regular = S_ISREG(st.st_mode);
  if (regular && uint64_t(st.st_size) > max_file_size)
    throw Error(path, "", cat("is ", st.st_size, " bytes, larger than the 64 GiB limit"));

  std::vector<std::byte> data(regular ? size_t(st.st_size) : size_t(1) << 16);
  size_t n = 0;
  for (;;) {
    if (n == data.size()) {
      if (regular) break;
      if (n >= max_file_size) throw Error(path, "", "is larger than the 64 GiB limit");
      data.resize(n * 2);
    }
    ssize_t r = ::read(f.fd, data.data() + n, data.size() - n);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw Error(path, "", cat("cannot read: ", errno_text(errno)));
    }
    if (r == 0) break;
    n += size_t(r);
  }
  data.resize(n); // a regular file that shrank while we read it
  return data;
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  static std::atomic<uint64_t> counter{0};
  temp_ = cat(path_, ".tmp.", ::getpid(), ".", counter++);
  // O_EXCL: never reuse (or follow a link planted at) someone else's temporary.
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd_ < 0) throw Error(path_, "", cat("cannot create ", temp_, ": ", errno_text(errno)));
}

AtomicFile::~AtomicFile() {
  if (!committed_) discard();
}

void AtomicFile::discard() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(temp_.c_str());
}

void AtomicFile::write(std::span<const std::byte> data) {
  if (fd_ < 0) throw Error(path_, "", "write after commit or failure");
  while (!data.empty()) {
    ssize_t r = ::write(fd_, data.data(), data.size());
    if (r < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      discard();
      throw Error(path_, "", cat("cannot write: ", errno_text(err)));
    }
    data = data.subspan(size_t(r));
  }
}

void AtomicFile::commit() {
  if (fd_ < 0) throw Error(path_, "", "commit after commit or failure");
  // close() can report a deferred write error (NFS, quota): check it before renaming.
  int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) {
    int err = errno;
    discard();
    throw Error(path_, "", cat("cannot write: ", errno_text(err)));
  }
  if (std::rename(temp_.c_str(), path_.c_str()) != 0) {
    int err = errno;
    discard();
    throw Error(path_, "", cat("cannot replace: ", errno_text(err)));
  }
  committed_ = true;
}

void write_file_atomic(const std::string& path, std::span<const std::byte> data) {
  AtomicFile f(path);
  f.write(data);
  f.commit();
}

void write_file_atomic(const std::string& path, std::string_view data) {
  write_file_atomic(path, std::as_bytes(std::span(data)));
}

} // namespace kiln::io
