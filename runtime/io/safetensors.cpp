#include "runtime/io/safetensors.hpp"

#include "runtime/error.hpp"
#include "runtime/io/endian.hpp"
#include "runtime/io/file.hpp"
#include "runtime/io/limits.hpp"
#include "runtime/io/safetensors_dtype.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <optional>
#include <set>
#include <string_view>

namespace kiln::io {
namespace {

using json = nlohmann::json;

constexpr uint64_t max_header = 100'000'000; // the reference implementation's limit

// A tensor name fit for a message: control bytes escaped, at most ~200 bytes.
std::string printable(std::string_view s) {
  if (s.empty()) return "(empty name)";
  std::string out;
  size_t n = std::min<size_t>(s.size(), 200);
  while (n < s.size() && n > 0 && (static_cast<unsigned char>(s[n]) & 0xc0) == 0x80)
    --n; // whole UTF-8
  for (char c : s.substr(0, n)) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f)
      out += cat("\\x", "0123456789abcdef"[u >> 4], "0123456789abcdef"[u & 15]);
    else
      out += c;
  }
  return n < s.size() ? out + "..." : out;
}

// Parses the header, rejecting duplicate keys (which nlohmann would silently merge).
json parse_json(std::string_view text, const std::string& name) {
  std::vector<std::set<std::string>> open; // the keys seen in each enclosing object
  std::optional<std::string> dup;
  bool dup_top = false;
  auto track = [&](int, json::parse_event_t ev, json& v) {
    if (ev == json::parse_event_t::object_start) {
      open.emplace_back();
    } else if (ev == json::parse_event_t::object_end) {
      open.pop_back();
    } else if (ev == json::parse_event_t::key && !dup &&
               !open.back().insert(v.get<std::string>()).second) {
      dup = v.get<std::string>();
      dup_top = open.size() == 1;
    }
    return true;
  };
  json j;
  try {
    j = json::parse(text.begin(), text.end(), track);
  } catch (const json::parse_error& e) {
    throw Error(name, "header", cat("header is not valid json (error at byte ", e.byte, ")"));
  } catch (const json::exception&) { // numbers out of range and the like
    throw Error(name, "header", "header is not valid json");
  }
  if (dup && dup_top) throw Error(name, printable(*dup), "duplicate tensor name");
  if (dup) throw Error(name, "header", cat("duplicate key \"", printable(*dup), "\""));
  if (!j.is_object()) throw Error(name, "header", "header is not a json object");
  return j;
}

std::map<std::string, std::string> parse_metadata(const json& m, const std::string& name) {
  if (!m.is_object()) throw Error(name, "__metadata__", "is not an object of strings");
  std::map<std::string, std::string> out;
  for (auto it = m.begin(); it != m.end(); ++it) {
    if (!it.value().is_string())
      throw Error(name, "__metadata__",
                  cat("value of \"", printable(it.key()), "\" is not a string"));
    out.emplace(it.key(), it.value().get<std::string>());
  }
  return out;
}

struct Entry {
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

// One tensor's header entry, checked against the data section's size.
Entry parse_entry(const json& v, uint64_t data_size, const std::string& name,
                  const std::string& where) {
  auto fail = [&](const std::string& what) { return Error(name, where, what); };
  if (!v.is_object()) throw fail("entry is not an object");
  for (auto it = v.begin(); it != v.end(); ++it)
    if (it.key() != "dtype" && it.key() != "shape" && it.key() != "data_offsets")
      throw fail(cat("unknown key \"", printable(it.key()), "\""));
  for (const char* k : {"dtype", "shape", "data_offsets"})
    if (!v.contains(k)) throw fail(cat("missing \"", k, "\""));

  const json& d = v["dtype"];
  if (!d.is_string()) throw fail("dtype is not a string");
  std::optional<DType> dtype = safetensors_dtype(d.get_ref<const std::string&>());
  if (!dtype)
    throw fail(cat("unsupported dtype \"", printable(d.get_ref<const std::string&>()),
                   "\" (want F16, BF16, F32, F64, I32 or I64)"));

  const json& s = v["shape"];
  Shape shape;
  if (!s.is_array()) throw fail("shape is not a list");
  for (const json& x : s) {
    if (!x.is_number_unsigned()) throw fail("shape is not a list of non-negative integers");
    uint64_t dim = x.get<uint64_t>();
    if (dim > uint64_t(max_elements)) throw fail(cat("dimension ", dim, " is larger than 2^40"));
    shape.push_back(int64_t(dim));
  }
  std::optional<int64_t> n = bounded_numel(shape);
  if (!n) throw fail(cat("shape ", shape_str(shape), " has more than 2^40 elements"));

  const json& o = v["data_offsets"];
  if (!o.is_array() || o.size() != 2 || !o[0].is_number_unsigned() || !o[1].is_number_unsigned())
    throw fail("data_offsets is not a list of two non-negative integers");
  const uint64_t begin = o[0].get<uint64_t>(), end = o[1].get<uint64_t>();
  const std::string range = cat("data_offsets [", begin, ", ", end, "]");
  if (end < begin) throw fail(cat(range, " end before they begin"));
  if (end > data_size)
    throw fail(cat(range, " run past the end of the data section (", data_size, " bytes)"));
  const uint64_t want = uint64_t(*n) * dtype_size(*dtype);
  if (end - begin != want)
    throw fail(cat(range, " hold ", end - begin, " bytes but ", dtype_name(*dtype), " ",
                   shape_str(shape), " needs ", want));
  return {*dtype, std::move(shape), begin, end};
}

// The reference implementation requires the ranges to tile the data section exactly: no
// overlaps (two tensors sharing bytes), no gaps and no trailing bytes.
void check_tiling(std::vector<std::pair<const std::string*, const Entry*>> ranges,
                  uint64_t data_size, const std::string& name) {
  // Stable: ties stay in name order, so the message names the same pair every time.
  std::stable_sort(ranges.begin(), ranges.end(), [](const auto& a, const auto& b) {
    return std::pair(a.second->begin, a.second->end) < std::pair(b.second->begin, b.second->end);
  });
  uint64_t at = 0;
  const std::string* prev = nullptr;
  for (auto [tname, e] : ranges) {
    if (e->begin < at)
      throw Error(name, printable(*tname), cat("data overlaps tensor \"", printable(*prev), "\""));
    if (e->begin > at)
      throw Error(name, printable(*tname),
                  cat("data starts at byte ", e->begin, ", leaving a gap at byte ", at));
    at = e->end;
    prev = tname;
  }
  if (at != data_size)
    throw Error(name, "header",
                cat("tensors cover ", at, " bytes but the data section has ", data_size));
}

} // namespace

Safetensors parse_safetensors(std::span<const std::byte> data, const std::string& name) {
  if (data.size() < 8)
    throw Error(name, "header",
                cat("file is ", data.size(), " bytes, too short for a safetensors header"));
  const uint64_t header_len = load_le<uint64_t>(data.data());
  if (header_len > max_header)
    throw Error(name, "header", cat("header length ", header_len, " is larger than 100 MB"));
  if (header_len > data.size() - 8)
    throw Error(name, "header",
                cat("header length ", header_len, " runs past the end of the file (", data.size(),
                    " bytes)"));
  const auto* chars = reinterpret_cast<const char*>(data.data());
  const json j = parse_json(std::string_view(chars + 8, header_len), name);

  const size_t start = 8 + header_len;
  const uint64_t data_size = data.size() - start;
  Safetensors out;
  std::map<std::string, Entry> entries;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "__metadata__")
      out.metadata = parse_metadata(it.value(), name);
    else
      entries.emplace(it.key(), parse_entry(it.value(), data_size, name, printable(it.key())));
  }
  std::vector<std::pair<const std::string*, const Entry*>> ranges;
  for (const auto& [tname, e] : entries)
    ranges.emplace_back(&tname, &e);
  check_tiling(std::move(ranges), data_size, name);

  for (auto& [tname, e] : entries) {
    Tensor t(e.dtype, std::move(e.shape));
    if (t.nbytes()) std::memcpy(t.bytes(), chars + start + e.begin, t.nbytes());
    out.tensors.emplace(tname, std::move(t));
  }
  return out;
}

Safetensors read_safetensors(const std::string& path) {
  return parse_safetensors(read_file(path), path);
}

} // namespace kiln::io
