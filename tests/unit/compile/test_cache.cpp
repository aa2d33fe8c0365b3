// The kernel cache: hits, misses, corrupt entries rebuilt, concurrent writers.
#include "generator/compile/cache.hpp"
#include "runtime/io/file.hpp"

#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <atomic>
#include <thread>
#include <unistd.h>

using namespace kiln;
namespace fs = std::filesystem;

namespace {

std::string scratch() {
  std::string d = (fs::temp_directory_path() / "kiln-cache-test-XXXXXX").string();
  REQUIRE(mkdtemp(d.data()));
  return d;
}

CacheEntry entry(char fill, size_t n) {
  CacheEntry e;
  e.image.assign(n, fill);
  e.resources.registers = 40;
  e.resources.spill_stores = 8;
  e.resources.found = true;
  e.log = "ptxas info : Used 40 registers";
  return e;
}

} // namespace

TEST_CASE("keys separate every input") {
  const std::string a = cache_key({"src", "sm_90"});
  CHECK(a == cache_key({"src", "sm_90"}));
  CHECK(a != cache_key({"src", "sm_80"}));
  CHECK(cache_key({"ab", "c"}) != cache_key({"a", "bc"})); // parts are length-prefixed
  CHECK(a.size() == 32);
}

TEST_CASE("miss, then hit with the same bytes and resources") {
  const std::string dir = scratch();
  const KernelCache c(dir);
  std::string problem;
  CHECK_FALSE(c.get("00deadbeef", &problem));
  CHECK(problem.empty());
  c.put("00deadbeef", entry('x', 1000));
  const auto e = c.get("00deadbeef", &problem);
  REQUIRE(e);
  CHECK(e->image == std::vector<char>(1000, 'x'));
  CHECK(e->resources.registers == 40);
  CHECK(e->resources.spill_stores == 8);
  CHECK(e->log.find("40 registers") != std::string::npos);
  CHECK(c.stats().entries == 1);
  CHECK(c.clear() == 1);
  CHECK(c.stats().entries == 0);
  fs::remove_all(dir);
}

TEST_CASE("a corrupt entry is reported, removed and then missing") {
  const std::string dir = scratch();
  const KernelCache c(dir);
  c.put("11cafe", entry('y', 4096));
  std::string path;
  for (auto& f : fs::recursive_directory_iterator(dir))
    if (f.path().extension() == ".entry") path = f.path();
  REQUIRE(!path.empty());
  { // flip a byte of the image
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-10, std::ios::end);
    f.put('z');
  }
  std::string problem;
  CHECK_FALSE(c.get("11cafe", &problem));
  CHECK(problem.find("corrupt") != std::string::npos);
  CHECK(problem.find("content hash") != std::string::npos);
  CHECK_FALSE(fs::exists(path));
  // Truncated entries too.
  c.put("11cafe", entry('y', 4096));
  fs::resize_file(path, 20);
  problem.clear();
  CHECK_FALSE(c.get("11cafe", &problem));
  CHECK(!problem.empty());
  fs::remove_all(dir);
}

TEST_CASE("concurrent writers and readers never see a partial entry") {
  const std::string dir = scratch();
  std::vector<std::thread> ts;
  std::atomic<int> bad{0};
  for (int t = 0; t < 8; ++t)
    ts.emplace_back([&, t] {
      const KernelCache c(dir);
      for (int i = 0; i < 50; ++i) {
        const std::string key = "22" + std::to_string(i % 5);
        if ((i + t) % 2) c.put(key, entry(char('a' + i % 5), 100000));
        std::string problem;
        if (auto e = c.get(key, &problem)) {
          if (e->image != std::vector<char>(100000, char('a' + i % 5))) ++bad;
        }
        if (!problem.empty()) ++bad;
      }
    });
  for (auto& t : ts) t.join();
  CHECK(bad == 0);
  // No temporary files are left behind.
  for (auto& f : fs::recursive_directory_iterator(dir))
    if (f.is_regular_file()) CHECK(f.path().extension() == ".entry");
  fs::remove_all(dir);
}
