// FileLock: exclusive between holders, in one process as across processes, released with
// its holder (also when the holder is killed), never by closing another descriptor.
#include "runtime/io/file_lock.hpp"

#include "runtime/error.hpp"
#include "tests/unit/io/helpers.hpp"

#include <csignal>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace kiln;
using namespace kiln::io;
using kiln::test::TempDir;

TEST_CASE("a held lock excludes a second holder until released") {
  TempDir d;
  const std::string p = d / "x.lock";
  {
    std::optional<FileLock> a = FileLock::try_acquire(p);
    REQUIRE(a);
    CHECK_FALSE(FileLock::try_acquire(p)); // another open file description: refused
    // Opening and closing the file elsewhere (what drops a classic POSIX lock) keeps it.
    ::close(::open(p.c_str(), O_RDONLY));
    CHECK_FALSE(FileLock::try_acquire(p));
  }
  CHECK(FileLock::try_acquire(p)); // released with its holder
  CHECK(FileLock::try_acquire(p)); // and the file stays usable
}

TEST_CASE("a lock held by a killed process is released with it") {
  TempDir d;
  const std::string p = d / "x.lock";
  int ready[2], hold[2];
  REQUIRE(::pipe(ready) == 0);
  REQUIRE(::pipe(hold) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const FileLock l = FileLock::acquire(p);
    char c = 1;
    (void)!::write(ready[1], &c, 1);
    (void)!::read(hold[0], &c, 1); // until killed
    ::_exit(0);
  }
  char c;
  REQUIRE(::read(ready[0], &c, 1) == 1); // the child holds it now
  CHECK_FALSE(FileLock::try_acquire(p));
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  CHECK(WIFSIGNALED(status));
  CHECK(FileLock::try_acquire(p));
  for (int fd : {ready[0], ready[1], hold[0], hold[1]})
    ::close(fd);
}

TEST_CASE("a lock file that cannot be created names it") {
  TempDir d;
  CHECK_THROWS_WITH_AS(FileLock::acquire(d / "missing/x.lock"), doctest::Contains("missing/x.lock"),
                       Error);
}
