// libFuzzer target: the kiln-plan/1 loader and validator on arbitrary bytes.
#include "runtime/error.hpp"
#include "runtime/plan.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const kiln::Plan p =
        kiln::parse_plan(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
    const std::string text = kiln::plan_to_json(p).dump();
    if (kiln::plan_to_json(kiln::parse_plan(text, "again.json")).dump() != text) __builtin_trap();
  } catch (const kiln::Error&) {
  }
  return 0;
}
