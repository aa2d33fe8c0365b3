// Shared by the io tests: byte buffers from text, a scratch directory, and a check that an
// expression throws kiln::Error with a given place and message.
#pragma once

#include "runtime/error.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace kiln::test {

inline std::vector<std::byte> bytes(std::string_view s) {
  auto b = std::as_bytes(std::span(s));
  return {b.begin(), b.end()};
}

inline std::string text(std::span<const std::byte> b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

// A fresh directory under the system temp dir, removed with everything in it.
class TempDir {
public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("kiln-io-test." + std::to_string(::getpid()) + "." + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }
  // Names of the directory's entries, sorted.
  std::vector<std::string> list() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(path_))
      names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

private:
  std::filesystem::path path_;
};

template <class F> std::optional<Error> error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  return std::nullopt;
}

} // namespace kiln::test

// expr throws kiln::Error(file, where, <message containing part>).
#define CHECK_ERROR(expr, file_, where_, part)                                                     \
  do {                                                                                             \
    auto err_ = ::kiln::test::error_of([&] { (void)(expr); });                                     \
    REQUIRE_MESSAGE(err_.has_value(), "no kiln::Error from " #expr);                               \
    INFO("error: ", std::string(err_->what()));                                                    \
    CHECK(err_->file() == (file_));                                                                \
    CHECK(err_->where() == (where_));                                                              \
    CHECK(err_->message().find(part) != std::string::npos);                                        \
  } while (0)
