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

TEST_CASE("verify names every entry that fails its check and removes nothing") {
  const std::string dir = scratch();
  const KernelCache c(dir);
  c.put("33aa", entry('a', 1000));
  c.put("44bb", entry('b', 1000));
  c.put("55cc", entry('c', 1000));
  const auto file = [&](const std::string& key) {
    return dir + "/" + key.substr(0, 2) + "/" + key + ".entry";
  };
  int64_t n = 0;
  CHECK(c.verify(&n).empty());
  CHECK(n == 3);
  { // one byte of 44bb's image flipped, 55cc cut short
    std::fstream f(file("44bb"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-1, std::ios::end);
    f.put('z');
  }
  fs::resize_file(file("55cc"), 20);
  const auto bad = c.verify(&n);
  CHECK(n == 3);
  REQUIRE(bad.size() == 2);
  CHECK(bad[0].path == file("44bb"));
  CHECK(bad[0].problem == "content hash mismatch");
  CHECK(bad[1].path == file("55cc"));
  CHECK(bad[1].problem == "truncated header");
  CHECK(fs::exists(file("44bb")));
  CHECK(fs::exists(file("55cc")));
  fs::remove_all(dir);
}

TEST_CASE("a key's lock lets one of several builders build it; the others find the entry") {
  const std::string dir = scratch();
  std::atomic<int> builds{0}, hits{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 8; ++t)
    ts.emplace_back([&] {
      const KernelCache c(dir);
      if (c.get("66dd", nullptr)) return void(++hits);
      const io::FileLock held = c.lock("66dd");
      if (c.get("66dd", nullptr)) return void(++hits);
      ++builds;
      c.put("66dd", entry('d', 100000));
    });
  for (auto& t : ts)
    t.join();
  CHECK(builds == 1);
  CHECK(hits == 7);
  // clear takes the lock files too.
  CHECK(KernelCache(dir).clear() == 1);
  for (auto& f : fs::recursive_directory_iterator(dir))
    CHECK_FALSE(f.is_regular_file());
  fs::remove_all(dir);
}
