// libFuzzer target: the kiln-model/1 loader on arbitrary bytes. Only kiln::Error may escape
// the parser; anything else (crash, other exception, sanitizer report) is a finding.
#include "generator/model/model_json.hpp"
#include "runtime/error.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const kiln::Model m =
        kiln::parse_model(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
    // A model that loads must save and load again to the same text.
    const std::string text = kiln::model_to_text(m);
    if (kiln::model_to_text(kiln::parse_model(text, "again.json")) != text) __builtin_trap();
  } catch (const kiln::Error&) {
  }
  return 0;
}
