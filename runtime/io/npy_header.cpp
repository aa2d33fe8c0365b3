#include "runtime/io/npy_header.hpp"

#include "runtime/error.hpp"

#include <cstdint>
#include <optional>

namespace kiln::io {
namespace {

// A recursive-descent reader for the subset of Python literals a .npy header uses.
class Reader {
public:
  Reader(std::string_view text, const std::string& name) : s_(text), name_(name) {}

  NpyHeader dict() {
    std::optional<std::string> descr;
    std::optional<bool> fortran;
    std::optional<Shape> shape;
    expect('{');
    while (peek() != '}') {
      size_t at = pos_;
      std::string key = string();
      expect(':');
      auto once = [&](bool seen) {
        if (seen) fail(cat("duplicate key '", key, "'"), at);
      };
      if (key == "descr") {
        once(descr.has_value());
        if (peek() == '[') fail("structured dtypes are not supported", pos_);
        descr = string();
      } else if (key == "fortran_order") {
        once(fortran.has_value());
        fortran = boolean();
      } else if (key == "shape") {
        once(shape.has_value());
        shape = tuple();
      } else {
        fail(cat("unknown key '", key, "'"), at);
      }
      if (peek() != ',') break;
      ++pos_;
    }
    expect('}');
    peek();
    if (pos_ != s_.size()) fail(cat("unexpected ", found(), " after the dict"), pos_);
    if (!descr) fail("missing key 'descr'", pos_);
    if (!fortran) fail("missing key 'fortran_order'", pos_);
    if (!shape) fail("missing key 'shape'", pos_);
    return {*descr, *fortran, *shape};
  }

private:
  [[noreturn]] void fail(const std::string& what, size_t at) const {
    throw Error(name_, "header", cat(what, " (at header byte ", at, ")"));
  }

  // The next non-space character, or '\0' at the end.
  char peek() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
    return pos_ < s_.size() ? s_[pos_] : '\0';
  }

  // The character at pos_, for messages.
  std::string found() const {
    if (pos_ >= s_.size()) return "the end of the header";
    char c = s_[pos_];
    if (c > ' ' && c < 127) return cat("'", c, "'");
    static const char* hex = "0123456789abcdef";
    auto u = static_cast<unsigned char>(c);
    return cat("byte 0x", hex[u >> 4], hex[u & 15]);
  }

  void expect(char c) {
    if (peek() != c || pos_ == s_.size()) fail(cat("expected '", c, "' but found ", found()), pos_);
    ++pos_;
  }

  // A quoted string without escapes, at most 32 characters: no valid key or descr needs more,
  // and the bound keeps messages that quote one short.
  std::string string() {
    char q = peek();
    if (q != '\'' && q != '"') fail(cat("expected a string but found ", found()), pos_);
    size_t begin = ++pos_;
    while (pos_ < s_.size() && s_[pos_] != q) {
      char c = s_[pos_];
      if (c == '\\' || c < ' ' || c >= 127)
        fail(cat("unsupported ", found(), " in a string"), pos_);
      if (pos_ - begin == 32) fail("string longer than 32 characters", begin - 1);
      ++pos_;
    }
    if (pos_ == s_.size()) fail("unterminated string", begin - 1);
    return std::string(s_.substr(begin, pos_++ - begin));
  }

  bool boolean() {
    peek();
    if (word("True")) return true;
    if (word("False")) return false;
    fail(cat("expected True or False but found ", found()), pos_);
  }

  // Consumes w if it is the whole identifier at pos_.
  bool word(std::string_view w) {
    if (s_.substr(pos_, w.size()) != w || ident_char(pos_ + w.size())) return false;
    pos_ += w.size();
    return true;
  }

  bool ident_char(size_t i) const {
    if (i >= s_.size()) return false;
    char c = s_[i];
    return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  }

  // `()`, `(3,)`, `(2, 3)`, `(2, 3,)`. `(3)` is an int in Python, not a tuple.
  Shape tuple() {
    size_t at = pos_;
    expect('(');
    Shape shape;
    bool comma = false;
    while (peek() != ')') {
      shape.push_back(dimension());
      comma = peek() == ',';
      if (!comma) break;
      ++pos_;
    }
    expect(')');
    if (shape.size() == 1 && !comma) fail("shape is not a tuple (a 1-tuple needs a comma)", at);
    return shape;
  }

  int64_t dimension() {
    char c = peek();
    size_t at = pos_;
    if (c == '-') fail("negative dimension in shape", at);
    if (c < '0' || c > '9') fail(cat("expected a dimension but found ", found()), at);
    if (c == '0' && pos_ + 1 < s_.size() && s_[pos_ + 1] >= '0' && s_[pos_ + 1] <= '9')
      fail("dimension with a leading zero", at);
    uint64_t v = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      v = v * 10 + uint64_t(s_[pos_++] - '0');
      if (v > uint64_t(INT64_MAX / 10)) fail("dimension is too large", at);
    }
    if (ident_char(pos_) || (pos_ < s_.size() && s_[pos_] == '.'))
      fail(cat("unexpected ", found(), " in a dimension"), pos_);
    return int64_t(v);
  }

  std::string_view s_;
  const std::string& name_;
  size_t pos_ = 0;
};

std::string shape_repr(const Shape& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

} // namespace

NpyHeader parse_npy_header(std::string_view text, const std::string& name) {
  return Reader(text, name).dict();
}

std::string format_npy_header(const NpyHeader& h) {
  std::string s =
      cat("{'descr': '", h.descr, "', 'fortran_order': ", h.fortran_order ? "True" : "False",
          ", 'shape': ", shape_repr(h.shape), ", }");
  // numpy's GROWTH_AXIS_MAX_DIGITS: room for the growth axis to reach 21 digits.
  if (!h.shape.empty()) {
    size_t digits = std::to_string(h.shape[h.fortran_order ? h.shape.size() - 1 : 0]).size();
    if (digits < 21) s.append(21 - digits, ' ');
  }
  return s;
}

} // namespace kiln::io
