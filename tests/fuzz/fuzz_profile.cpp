// libFuzzer target: the kiln-profile/1 reader on arbitrary bytes. Only kiln::Error may escape
// the parser; anything else (crash, other exception, sanitizer report) is a finding. A
// profile that loads must be written (profile_to_text) as one that loads again, with the
// same layers, times, tile and counts: kiln rewrites profiles it read (run cache keys).
#include "generator/model/profile.hpp"
#include "runtime/error.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln::Profile p;
  try {
    p = kiln::parse_profile(std::string_view(reinterpret_cast<const char*>(data), size),
                            "fuzz.json");
  } catch (const kiln::Error&) {
    return 0;
  }
  kiln::Profile q;
  try {
    q = kiln::parse_profile(kiln::profile_to_text(p), "again.json");
  } catch (const kiln::Error&) {
    __builtin_trap(); // what kiln read, it wrote unreadable
  }
  if (q.model != p.model || q.gpu != p.gpu || q.dtype != p.dtype || q.tile != p.tile ||
      q.input_shape != p.input_shape || q.densities.size() != p.densities.size() ||
      q.times.size() != p.times.size())
    __builtin_trap();
  for (size_t i = 0; i < p.densities.size(); ++i) {
    const kiln::LayerProfile &a = p.densities[i], &b = q.densities[i];
    if (a.layer != b.layer || a.input != b.input || a.elements != b.elements ||
        a.nonzeros != b.nonzeros || a.tiles.count != b.tiles.count)
      __builtin_trap();
  }
  for (auto it = p.times.begin(), jt = q.times.begin(); it != p.times.end(); ++it, ++jt)
    if (it->first != jt->first) __builtin_trap();
  return 0;
}
