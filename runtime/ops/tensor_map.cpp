// tensor_map.encode: -> map (a u8 [128] derived buffer), the TMA tensor map of a named buffer
// (TensorMapEncode), run in the prepare phase: the arena's addresses are fixed once it is
// allocated, so a map is written once per binding. The cpu reference (and the emulator,
// which runs it the same way) writes the KilnTensorMap with the host address; the cuda
// backend encodes the driver's CUtensorMap (runtime/cuda/tensor_map.cpp).
#include "runtime/ops/tensor_map.hpp"

#include "runtime/cpu/step_args.hpp"
#include "runtime/error.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/ops/step_check.hpp"

#include <cstring>

namespace kiln {

std::string tensor_map_problem(const Plan& p, const TensorMapEncode& m) {
  const int b = p.find_buffer(m.buffer);
  if (b < 0) return cat("maps no buffer: there is none named \"", m.buffer, "\"");
  const Buffer& buf = p.buffers[b];
  if (m.dtype != buf.dtype)
    return cat("dtype ", dtype_name(m.dtype), " is not the dtype of \"", m.buffer, "\" (",
               dtype_name(buf.dtype), ")");
  if (m.mode != "tiled" && m.mode != "im2col")
    return cat("mode \"", m.mode, "\": \"tiled\" or \"im2col\"");
  const bool im2col = m.mode == "im2col";
  const size_t rank = m.dims.size();
  if (rank < 1 || rank > KILN_TMA_MAX_RANK) return cat("rank ", rank, " outside 1..5");
  if (im2col && rank != 4 && rank != 5) return cat("im2col: rank ", rank, ", not 4 or 5");
  if (m.strides.size() != rank - 1)
    return cat("strides: ", m.strides.size(), " values, expected ", rank - 1, " (dimensions 1..)");
  if (m.box.size() != (im2col ? 2 : rank))
    return cat("box: ", m.box.size(), " values, expected ", im2col ? 2 : rank,
               im2col ? " (channels per pixel, pixels per copy)" : "");
  if (m.element_strides.size() != rank)
    return cat("element_strides: ", m.element_strides.size(), " values, expected ", rank);
  if (!im2col && (!m.lower.empty() || !m.upper.empty()))
    return "lower, upper: the bounding box of an im2col map, not a tiled one";
  const int64_t es = int64_t(dtype_size(m.dtype));
  int64_t last = m.offset + es; // one past the farthest byte the map reaches
  for (size_t d = 0; d < rank; ++d) {
    if (m.dims[d] < 1 || m.dims[d] > (int64_t(1) << 32))
      return cat("dims[", d, "] = ", m.dims[d], " outside 1..2^32");
    if (!im2col && (m.box[d] < 1 || m.box[d] > 256))
      return cat("box[", d, "] = ", m.box[d], " outside 1..256");
    if (!im2col && m.element_strides[d] != 1)
      return cat("element_strides[", d, "] = ", m.element_strides[d],
                 ": a tiled map's are 1 (the emulator reads dense boxes)");
    if (im2col && (m.element_strides[d] < 1 || m.element_strides[d] > 8 ||
                   (d == 0 && m.element_strides[d] != 1)))
      return cat("element_strides[", d, "] = ", m.element_strides[d],
                 ": an im2col map's traversal strides are 1..8, 1 for dimension 0");
    const int64_t stride = d == 0 ? es : m.strides[d - 1];
    if (d > 0 && (stride <= 0 || stride % 16 || stride >= (int64_t(1) << 40)))
      return cat("strides[", d - 1, "] = ", stride, " is not a multiple of 16 bytes in 16..2^40");
    last += (m.dims[d] - 1) * stride;
  }
  if (im2col) {
    if (m.box[0] < 1 || m.box[0] > 256 || m.box[1] < 1 || m.box[1] > 1024)
      return cat("box = [", m.box[0], ", ", m.box[1],
                 "]: an im2col copy's channels per pixel are 1..256, its pixels 1..1024");
    const int64_t lim = rank == 4 ? 128 : 16; // the corners' range, by rank (the driver's)
    if (m.lower.size() != rank - 2 || m.upper.size() != rank - 2)
      return cat("lower, upper: ", rank - 2, " values each (W first)");
    for (size_t s = 0; s < rank - 2; ++s) {
      if (m.lower[s] < -lim || m.lower[s] >= lim || m.upper[s] < -lim || m.upper[s] >= lim)
        return cat("lower[", s, "] = ", m.lower[s], ", upper[", s, "] = ", m.upper[s], ": outside ",
                   -lim, "..", lim - 1, " for rank ", rank);
      if (m.dims[1 + s] - 1 + m.upper[s] < m.lower[s])
        return cat("the bounding box is empty in dimension ", 1 + s);
    }
  }
  if (m.box[0] * es % 16) return cat("box[0] * ", es, " bytes is not a multiple of 16 bytes");
  if (m.swizzle != 0 && m.swizzle != 32 && m.swizzle != 64 && m.swizzle != 128)
    return cat("swizzle ", m.swizzle, " is not 0, 32, 64 or 128 bytes");
  if (m.swizzle && m.box[0] * es > m.swizzle)
    return cat("a box row of ", m.box[0] * es, " bytes is wider than the swizzle span (", m.swizzle,
               ")");
  if (m.oob_fill != "zero") return cat("oob_fill \"", m.oob_fill, "\": only \"zero\" is supported");
  if (m.offset < 0 || (p.byte_offset(b) + m.offset) % 16)
    return cat("the address of \"", m.buffer, "\" + ", m.offset, " bytes is not 16-byte aligned");
  // (A pitched view's bytes span its runs: Buffer::span_bytes.)
  if (last > buf.span_bytes())
    return cat("reaches byte ", last, " of \"", m.buffer, "\", which spans ", buf.span_bytes());
  return "";
}

KilnTensorMap tensor_map_of(const Plan& p, const TensorMapEncode& m, const std::byte* arena) {
  KilnTensorMap t;
  std::memset(&t, 0, sizeof t);
  t.global = arena + p.byte_offset(p.find_buffer(m.buffer)) + m.offset;
  t.rank = unsigned(m.dims.size());
  t.elem_bytes = unsigned(dtype_size(m.dtype));
  t.swizzle = unsigned(m.swizzle);
  t.mode = m.mode == "im2col" ? KILN_TMA_IM2COL : KILN_TMA_TILED;
  for (size_t d = 0; d < m.dims.size(); ++d) {
    t.dims[d] = (unsigned long long)m.dims[d];
    t.strides[d] = d == 0 ? t.elem_bytes : (unsigned long long)m.strides[d - 1];
    if (t.mode == KILN_TMA_TILED)
      t.box[d] = unsigned(m.box[d]);
    else
      t.im2col.element_strides[d] = (unsigned char)m.element_strides[d];
  }
  if (t.mode == KILN_TMA_IM2COL) {
    t.im2col.channels = (unsigned short)m.box[0];
    t.im2col.pixels = (unsigned short)m.box[1];
    for (size_t s = 0; s < m.lower.size(); ++s) {
      t.im2col.lower[s] = (signed char)m.lower[s];
      t.im2col.upper[s] = (signed char)m.upper[s];
    }
  }
  return t;
}

namespace {

using sv = std::string_view;
constexpr sv map_out[] = {"map"};
constexpr RoleType types[] = {{"map", ArgType::u8}};
static_assert(sizeof(KilnTensorMap) <= 128, "a map fits its 128-byte buffer");

void check_encode(const StepCheck& c) {
  c.expect("map", {128});
  if (c.p.byte_offset(c.s.need("map")) % 64)
    c.fail("the map buffer is not 64-byte aligned in the arena");
  if (const std::string why = tensor_map_problem(c.p, c.s.tensor_map()); !why.empty())
    c.fail("tensor map: " + why);
}

// The map with the host arena's address, as the emulator's kernels read it.
template <class T> void encode(const cpu::StepArgs<T>& c) {
  const KilnTensorMap t = tensor_map_of(c.p, c.s.tensor_map(), c.arena);
  std::byte* out = c.arena + c.p.byte_offset(c.s.need("map"));
  std::memset(out, 0, 128);
  std::memcpy(out, &t, sizeof t);
}

constexpr FnDef fn_defs[] = {{.fn = Fn::tensor_map_encode,
                              .name = "tensor_map.encode",
                              .signature = {{}, map_out, {}},
                              .params = params_index<TensorMapEncode>(),
                              .types = types,
                              .check = check_encode,
                              .cpu_f32 = encode<float>,
                              .cpu_f64 = encode<double>}};

} // namespace

namespace ops {
OpFile tensor_map_file() { return {{}, fn_defs}; }
} // namespace ops

} // namespace kiln
