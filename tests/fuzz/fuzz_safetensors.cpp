// libFuzzer target: parse_safetensors on arbitrary bytes. kiln::Error is the expected outcome
// for bad input; any other exception, a crash or a sanitizer report is a finding. A file that
// parses must survive a write and re-read unchanged.
#include "runtime/error.hpp"
#include "runtime/io/safetensors.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace {
bool same(const kiln::Tensor& a, const kiln::Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
         (a.nbytes() == 0 || std::memcmp(a.bytes(), b.bytes(), a.nbytes()) == 0);
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln::io::Safetensors st;
  try {
    st = kiln::io::parse_safetensors({reinterpret_cast<const std::byte*>(data), size}, "fuzz.st");
  } catch (const kiln::Error&) {
    return 0;
  }
  const auto back =
      kiln::io::parse_safetensors(kiln::io::serialize_safetensors(st), "round-trip.st");
  if (back.metadata != st.metadata || back.tensors.size() != st.tensors.size()) std::abort();
  for (const auto& [name, t] : st.tensors) {
    auto it = back.tensors.find(name);
    if (it == back.tensors.end() || !same(it->second, t)) std::abort();
  }
  return 0;
}
