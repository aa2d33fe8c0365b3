// libFuzzer target: parse_npy on arbitrary bytes. kiln::Error is the expected outcome for
// bad input; any other exception, a crash or a sanitizer report is a finding. A file that
// parses must survive a write and re-read unchanged.
#include "runtime/error.hpp"
#include "runtime/io/npy.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln::Tensor t;
  try {
    t = kiln::io::parse_npy({reinterpret_cast<const std::byte*>(data), size}, "fuzz.npy");
  } catch (const kiln::Error&) {
    return 0;
  }
  const kiln::Tensor u = kiln::io::parse_npy(kiln::io::serialize_npy(t), "round-trip.npy");
  if (u.dtype() != t.dtype() || u.shape() != t.shape() || u.nbytes() != t.nbytes() ||
      (t.nbytes() && std::memcmp(u.bytes(), t.bytes(), t.nbytes()) != 0))
    std::abort();
  return 0;
}
