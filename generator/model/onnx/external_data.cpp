#include "generator/model/onnx/external_data.hpp"

#include "runtime/error.hpp"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <optional>

namespace kiln::onnx_import {

namespace fs = std::filesystem;

namespace {

uint64_t parse_size(const std::string& text, const std::string& key, const std::string& tensor) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size())
    throw Error("", cat("initializer \"", tensor, "\""),
                cat("external data ", key, " \"", text, "\" is not a byte count"));
  return v;
}

} // namespace

std::vector<std::byte> read_external_data(const onnx::TensorProto& t, const std::string& model_dir,
                                          size_t expected_bytes) {
  const std::string where = cat("initializer \"", t.name(), "\"");
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "location")
      location = kv.value();
    else if (kv.key() == "offset")
      offset = parse_size(kv.value(), "offset", t.name());
    else if (kv.key() == "length")
      length = parse_size(kv.value(), "length", t.name());
  }
  if (location.empty()) throw Error("", where, "external data without a location");
  if (model_dir.empty())
    throw Error("", where,
                cat("external data \"", location,
                    "\" cannot be read: the model was not loaded from a file"));
  // Only a file beside the model: anything else could read arbitrary files.
  const fs::path loc(location);
  if (loc.is_absolute() || location.find('/') != std::string::npos ||
      location.find('\\') != std::string::npos || location == "." || location == "..")
    throw Error("", where,
                cat("external data location \"", location,
                    "\" is refused: it must name a file beside the model (no directories, no "
                    "absolute path, no ..)"));
  const fs::path path = fs::path(model_dir) / loc;
  std::error_code ec;
  const fs::path real = fs::canonical(path, ec);
  if (ec) throw Error("", where, cat("external data file ", path.string(), " cannot be opened"));
  if (real.parent_path() != fs::canonical(model_dir, ec))
    throw Error("", where,
                cat("external data \"", location, "\" is a link to ", real.string(),
                    ", outside the model's directory: refused"));
  if (!fs::is_regular_file(real, ec))
    throw Error("", where, cat("external data ", path.string(), " is not a regular file"));
  const uint64_t file_size = fs::file_size(real, ec);
  if (ec) throw Error("", where, cat("cannot read the size of ", path.string()));
  const uint64_t want = length.value_or(expected_bytes);
  if (want != expected_bytes)
    throw Error("", where,
                cat("external data length ", want, " does not match the tensor's ", expected_bytes,
                    " bytes"));
  if (offset > file_size || file_size - offset < want)
    throw Error("", where,
                cat("external data [", offset, ", ", offset + want, ") lies beyond the end of ",
                    path.string(), " (", file_size, " bytes)"));
  std::vector<std::byte> bytes(want);
  std::ifstream f(real, std::ios::binary);
  f.seekg(std::streamoff(offset));
  f.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(want));
  if (!f) throw Error("", where, cat("reading ", path.string(), " failed"));
  return bytes;
}

} // namespace kiln::onnx_import
