// Errors that reach the user. Every input is untrusted, so failures carry where they
// happened (a file and a JSON pointer, layer or tensor name) and what is wrong; the CLI
// prints them as `kiln: error: <file>: <where>: <what>`.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace kiln {

// Bad input or usage (exit code 2).
class Error : public std::runtime_error {
public:
  Error(std::string file, std::string where, std::string what)
      : std::runtime_error(compose(file, where, what)), file_(std::move(file)),
        where_(std::move(where)), what_(std::move(what)) {}
  explicit Error(std::string what) : Error("", "", std::move(what)) {}

  const std::string& file() const { return file_; }
  const std::string& where() const { return where_; }
  const std::string& message() const { return what_; }

  // The same error, attributed to a file (for errors raised below the file reader).
  Error in_file(const std::string& file) const {
    return file_.empty() ? Error(file, where_, what_) : *this;
  }

private:
  static std::string compose(const std::string& file, const std::string& where,
                             const std::string& what) {
    std::string s;
    if (!file.empty()) s += file + ": ";
    if (!where.empty()) s += where + ": ";
    return s + what;
  }
  std::string file_, where_, what_;
};

// Concatenate anything streamable; the runtime avoids fmt so per-model binaries stay lean.
template <class... A> std::string cat(const A&... a) {
  std::ostringstream os;
  (os << ... << a);
  return os.str();
}

} // namespace kiln
