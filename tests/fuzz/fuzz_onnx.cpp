// libFuzzer target: the ONNX importer on arbitrary bytes (protobuf parsing, graph order,
// tensors, every converter). Only kiln::Error may escape; anything else (crash, other
// exception, sanitizer report) is a finding. External data is refused here (no directory).
#include "generator/model/model_json.hpp"
#include "generator/model/onnx/onnx_import.hpp"
#include "runtime/error.hpp"

#include <cstddef>
#include <cstdint>
#include <span>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const kiln::ImportedModel im = kiln::import_onnx_bytes(
        std::span(reinterpret_cast<const std::byte*>(data), size), "fuzz.onnx", "", 0);
    // An imported model is a valid kiln model: it saves and loads again to the same text.
    const std::string text = kiln::model_to_text(im.model);
    if (kiln::model_to_text(kiln::parse_model(text, "again.json")) != text) __builtin_trap();
  } catch (const kiln::Error&) {
  }
  return 0;
}
