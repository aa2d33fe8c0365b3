#include "runtime/io/file.hpp"

#include "tests/unit/io/helpers.hpp"

#include <fstream>

using namespace kiln;
using namespace kiln::io;
using kiln::test::bytes;
using kiln::test::TempDir;

namespace {
std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}
} // namespace

TEST_CASE("read_file returns the whole file, empty files included") {
  TempDir dir;
  write_file_atomic(dir / "a", std::string_view("hello\0world", 11));
  CHECK(read_file(dir / "a") == bytes(std::string_view("hello\0world", 11)));
  write_file_atomic(dir / "empty", "");
  CHECK(read_file(dir / "empty").empty());
}

TEST_CASE("read_file names the file when it is missing") {
  TempDir dir;
  CHECK_ERROR(read_file(dir / "nope"), dir / "nope", "", "cannot open: no such file or directory");
}

TEST_CASE("read_file refuses a directory") {
  TempDir dir;
  CHECK_ERROR(read_file(dir.path().string()), dir.path().string(), "", "is a directory");
}

TEST_CASE("read_file reads non-regular files to their end") {
  CHECK(read_file("/dev/null").empty());
}

TEST_CASE("write_file_atomic replaces the file and leaves no temporary") {
  TempDir dir;
  write_file_atomic(dir / "f", "first version, longer");
  write_file_atomic(dir / "f", "second");
  CHECK(slurp(dir / "f") == "second");
  CHECK(dir.list() == std::vector<std::string>{"f"});
}

TEST_CASE("write_file_atomic onto a non-empty directory fails and leaves nothing behind") {
  // rename() cannot replace a non-empty directory, even for root.
  TempDir dir;
  std::filesystem::create_directory(dir / "target");
  write_file_atomic(dir / "target/inside", "x");
  CHECK_ERROR(write_file_atomic(dir / "target", "data"), dir / "target", "", "cannot replace");
  CHECK(dir.list() == std::vector<std::string>{"target"});
  CHECK(std::filesystem::is_directory(dir / "target"));
}

TEST_CASE("write_file_atomic into a missing directory names the file") {
  TempDir dir;
  CHECK_ERROR(write_file_atomic(dir / "no/such", "data"), dir / "no/such", "", "cannot create");
}

TEST_CASE("an uncommitted AtomicFile leaves neither the file nor a temporary") {
  TempDir dir;
  {
    AtomicFile f(dir / "out");
    f.write("partial");
    CHECK(std::filesystem::exists(f.temp_path()));
    CHECK(f.temp_path().starts_with(dir / "out.tmp."));
  }
  CHECK(dir.list().empty());
}

TEST_CASE("AtomicFile temporaries are unique within a process") {
  TempDir dir;
  AtomicFile a(dir / "out"), b(dir / "out");
  CHECK(a.temp_path() != b.temp_path());
  a.write("a");
  b.write("b");
  a.commit();
  b.commit();
  CHECK(slurp(dir / "out") == "b");
  CHECK(dir.list() == std::vector<std::string>{"out"});
}

TEST_CASE("AtomicFile refuses writes after commit") {
  TempDir dir;
  AtomicFile f(dir / "out");
  f.commit();
  CHECK_ERROR(f.write("late"), dir / "out", "", "after commit");
  CHECK(slurp(dir / "out").empty());
}

TEST_CASE("read_file refuses files over 64 GiB without reading them") {
  TempDir dir;
  write_file_atomic(dir / "huge", "");
  std::filesystem::resize_file(dir / "huge", max_file_size + 1); // sparse: no disk used
  CHECK_ERROR(read_file(dir / "huge"), dir / "huge", "", "larger than the 64 GiB limit");
}
