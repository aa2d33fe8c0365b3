#include "generator/select/families/hopper/nhwc_maps.hpp"

namespace kiln {

int64_t row_swizzle(int64_t channel_bytes) {
  for (int64_t w : {128, 64, 32})
    if (channel_bytes % w == 0) return w;
  return 0;
}

std::vector<TensorMapEncode> parity_maps(const Buffer& b, int64_t N, int64_t C, int64_t H,
                                         int64_t W, int64_t SH, int64_t SW, int64_t pitch,
                                         int64_t swizzle, int64_t box_c, int64_t tq, int64_t tp) {
  const int64_t es = int64_t(dtype_size(b.dtype));
  std::vector<TensorMapEncode> maps;
  for (int64_t ph = 0; ph < SH; ++ph)
    for (int64_t pw = 0; pw < SW; ++pw) {
      TensorMapEncode m;
      m.buffer = b.name;
      m.dtype = b.dtype;
      m.swizzle = swizzle;
      m.offset = (ph * W + pw) * pitch * es;
      m.dims = {C, (W - pw + SW - 1) / SW, (H - ph + SH - 1) / SH, N};
      m.strides = {SW * pitch * es, SH * W * pitch * es, H * W * pitch * es};
      m.box = {box_c, tq, tp, 1};
      m.element_strides = {1, 1, 1, 1};
      maps.push_back(std::move(m));
    }
  return maps;
}

TensorMapEncode image_rows_map(const Buffer& b, int64_t N, int64_t C, int64_t H, int64_t W,
                               int64_t SH, int64_t SW, int64_t pitch, int64_t swizzle,
                               int64_t box_c, int64_t tq, int64_t tp) {
  const int64_t es = int64_t(dtype_size(b.dtype));
  TensorMapEncode m;
  m.buffer = b.name;
  m.dtype = b.dtype;
  m.swizzle = swizzle;
  m.dims = {C, (W + SW - 1) / SW, N * (H / SH)};
  m.strides = {SW * pitch * es, SH * W * pitch * es};
  m.box = {box_c, tq, tp};
  m.element_strides = {1, 1, 1};
  return m;
}

TensorMapEncode overlapping_taps_map(const Buffer& b, int64_t N, int64_t C, int64_t H, int64_t W,
                                     int64_t taps, int64_t ow, int64_t box_c, int64_t tq,
                                     int64_t tp) {
  const int64_t es = int64_t(dtype_size(b.dtype));
  TensorMapEncode m;
  m.buffer = b.name;
  m.dtype = b.dtype;
  m.swizzle = taps * C * es;
  m.dims = {taps * C, ow, H, N};
  m.strides = {C * es, W * C * es, H * W * C * es};
  m.box = {box_c, tq, tp, 1};
  m.element_strides = {1, 1, 1, 1};
  return m;
}

std::optional<TensorMapEncode> im2col_map(const Buffer& b, int64_t N, int64_t C, int64_t H,
                                          int64_t W, int64_t SH, int64_t SW, int64_t PH, int64_t PW,
                                          int64_t OH, int64_t OW, int64_t pitch, int64_t swizzle,
                                          int64_t box_c, int64_t pixels) {
  const int64_t es = int64_t(dtype_size(b.dtype));
  TensorMapEncode m;
  m.buffer = b.name;
  m.dtype = b.dtype;
  m.mode = "im2col";
  m.swizzle = swizzle;
  m.dims = {C, W, H, N};
  m.strides = {pitch * es, W * pitch * es, H * W * pitch * es};
  m.box = {box_c, pixels};
  m.element_strides = {1, SW, SH, 1};
  m.lower = {-PW, -PH};
  m.upper = {-PW + (OW - 1) * SW - (W - 1), -PH + (OH - 1) * SH - (H - 1)};
  for (int64_t v : {m.lower[0], m.lower[1], m.upper[0], m.upper[1]})
    if (v < -128 || v > 127) return std::nullopt;
  if (SH > 8 || SW > 8) return std::nullopt; // traversal strides: 1..8
  return m;
}

TensorMapEncode rows_map(const Buffer& b, int64_t rows, int64_t C, int64_t pitch, int64_t swizzle,
                         int64_t box_c, int64_t box_rows) {
  TensorMapEncode m;
  m.buffer = b.name;
  m.dtype = b.dtype;
  m.swizzle = swizzle;
  m.dims = {C, rows};
  m.strides = {pitch * int64_t(dtype_size(b.dtype))};
  m.box = {box_c, box_rows};
  m.element_strides = {1, 1};
  return m;
}

} // namespace kiln
