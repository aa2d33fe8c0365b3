#include "runtime/error.hpp"
#include "runtime/io/endian.hpp"
#include "runtime/io/file.hpp"
#include "runtime/io/safetensors.hpp"
#include "runtime/io/safetensors_dtype.hpp"

#include <nlohmann/json.hpp>

#include <cstring>

namespace kiln::io {
namespace {

// The length prefix and the header, laid out as the reference writer does: "__metadata__"
// first, then each tensor's dtype, shape and data_offsets; compact JSON; spaces to a multiple
// of 8 so the data section starts aligned.
std::vector<std::byte> header_bytes(const Safetensors& st) {
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  if (!st.metadata.empty()) {
    auto& m = h["__metadata__"] = nlohmann::ordered_json::object();
    for (const auto& [k, v] : st.metadata)
      m[k] = v;
  }
  uint64_t at = 0;
  for (const auto& [name, t] : st.tensors) {
    if (name == "__metadata__") throw Error("", name, "tensor name is reserved for metadata");
    auto& e = h[name] = nlohmann::ordered_json::object();
    e["dtype"] = safetensors_dtype_name(t.dtype());
    e["shape"] = t.shape();
    e["data_offsets"] = nlohmann::ordered_json::array({at, at + t.nbytes()});
    at += t.nbytes();
  }
  std::string text;
  try {
    text = h.dump();
  } catch (const nlohmann::json::exception&) {
    throw Error("", "header", "a tensor name or metadata string is not valid utf-8");
  }
  text.append((8 - text.size() % 8) % 8, ' ');

  std::vector<std::byte> out;
  out.reserve(8 + text.size());
  append_le<uint64_t>(out, text.size());
  const auto* p = reinterpret_cast<const std::byte*>(text.data());
  out.insert(out.end(), p, p + text.size());
  return out;
}

} // namespace

std::vector<std::byte> serialize_safetensors(const Safetensors& st) {
  std::vector<std::byte> out = header_bytes(st);
  for (const auto& [name, t] : st.tensors) {
    const auto* p = t.bytes();
    out.insert(out.end(), p, p + t.nbytes());
  }
  return out;
}

void write_safetensors(const std::string& path, const Safetensors& st) {
  std::vector<std::byte> header;
  try {
    header = header_bytes(st);
  } catch (const Error& e) {
    throw e.in_file(path);
  }
  // Tensor by tensor: no second copy of the weights in memory.
  AtomicFile f(path);
  f.write(header);
  for (const auto& [name, t] : st.tensors)
    f.write({t.bytes(), t.nbytes()});
  f.commit();
}

} // namespace kiln::io
