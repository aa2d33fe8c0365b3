#include "generator/model/overrides.hpp"

#include "runtime/error.hpp"

#include <charconv>

namespace kiln {

namespace {

int64_t parse_dim(std::string_view s, std::string_view whole) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v <= 0 || v > (int64_t(1) << 20))
    throw Error("", "--image", cat("expected HxW with positive sizes, got \"", whole, "\""));
  return v;
}

} // namespace

Int2 parse_image_size(std::string_view text) {
  const size_t x = text.find('x');
  if (x == std::string_view::npos) {
    const int64_t s = parse_dim(text, text);
    return {s, s};
  }
  return {parse_dim(text.substr(0, x), text), parse_dim(text.substr(x + 1), text)};
}

void set_image_size(ModelOverrides& o, std::string_view text) {
  o.image = parse_image_size(text);
  o.image_one_size = text.find('x') == std::string_view::npos;
}

void apply_overrides(Model& m, const ModelOverrides& o) {
  if (o.batch) {
    if (*o.batch <= 0 || *o.batch > (int64_t(1) << 24))
      throw Error("", "--batch", cat("must be a positive batch size, got ", *o.batch));
    m.input_shape[0] = *o.batch;
  }
  if (o.image) {
    Int2 hw = *o.image;
    if (m.signal && o.image_one_size) hw[1] = 1; // "L" is a signal's Lx1
    if (m.input_shape.size() != 4 || (m.signal && hw[1] != 1))
      throw Error(m.file, "/input/shape",
                  cat("--image needs an image input [N, C, H, W]",
                      m.signal ? " (L or Lx1 for [N, C, L])" : "", ", the model takes ",
                      shape_str(caller_input_shape(m))));
    m.input_shape[2] = hw[0];
    m.input_shape[3] = hw[1];
  }
  if (o.dtype) m.dtype = *o.dtype;
  infer_shapes(m);
}

} // namespace kiln
