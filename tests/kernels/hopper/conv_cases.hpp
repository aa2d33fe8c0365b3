// The Hopper conv instances of conv_instances.cpp as data (shapes, tile, epilogue), their
// inputs and their float64 reference: shared by the emulator test (test_hopper_conv.cpp) and
// the GPU check (gpu_hopper_conv.cpp).
#pragma once

#include "runtime/emu/tensor_map.h"
#include "runtime/half.hpp"

#include <doctest/doctest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <random>
#include <vector>

#include "tests/kernels/hopper/conv_instance_list.hpp"

namespace hopper_test {

// A tensor of the instance's element type, as bytes.
struct Elems {
  int dtype;
  std::vector<std::uint8_t> bytes;
  Elems(int t, std::size_t n) : dtype(t), bytes(n * size()) {}
  std::size_t size() const { return dtype == 2 ? 4 : 2; }
  std::size_t count() const { return bytes.size() / size(); }
  void set(std::size_t i, float v) {
    if (dtype == 2) {
      std::memcpy(&bytes[i * 4], &v, 4);
      return;
    }
    const std::uint16_t b = dtype == 1 ? kiln::float_to_bf16_bits(v) : kiln::float_to_half_bits(v);
    std::memcpy(&bytes[i * 2], &b, 2);
  }
  double get(std::size_t i) const {
    if (dtype == 2) {
      float v;
      std::memcpy(&v, &bytes[i * 4], 4);
      return v;
    }
    std::uint16_t b;
    std::memcpy(&b, &bytes[i * 2], 2);
    return dtype == 1 ? kiln::bf16_bits_to_float(b) : kiln::half_bits_to_float(b);
  }
};

KilnTensorMap map_of(const void* p, unsigned elem, int rank,
                     std::initializer_list<unsigned long long> dims,
                     std::initializer_list<unsigned> box, int swizzle) {
  KilnTensorMap m;
  std::memset(&m, 0, sizeof m);
  m.global = p;
  m.rank = unsigned(rank);
  m.elem_bytes = elem;
  m.swizzle = unsigned(swizzle);
  unsigned long long stride = elem;
  int d = 0;
  for (auto x : dims) {
    m.dims[d] = x;
    m.strides[d++] = stride;
    stride *= x;
  }
  d = 0;
  for (auto b : box)
    m.box[d++] = b;
  return m;
}

// An instance's tensors, random in [-1, 1), y poisoned with NaN.
struct Problem {
  int OH, OW, K;
  Elems x, w, bias, res, y;
  Problem(const Instance& in, unsigned seed)
      : OH((in.H + 2 * in.PH - in.KH) / in.SH + 1), OW((in.W + 2 * in.PW - in.KW) / in.SW + 1),
        K(in.KH * in.KW * in.C), x(in.dtype, std::size_t(in.N) * in.H * in.W * in.C),
        w(in.dtype, std::size_t(in.O) * K), bias(in.dtype, std::size_t(in.O)),
        res(in.dtype, std::size_t(in.N) * OH * OW * in.O), y(in.dtype, res.count()) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (Elems* v : {&x, &w, &bias, &res})
      for (std::size_t i = 0; i < v->count(); ++i)
        v->set(i, u(rng));
    for (std::size_t i = 0; i < y.count(); ++i) // every element must be written
      y.set(i, std::nanf(""));
  }
  unsigned elem() const { return x.size(); }
  // x as SH * SW maps, map (ph, pw) the rows and columns of that parity (the template's
  // comment), and w as [O][KH*KW*C]; boxes of 128 bytes of channels.
  std::vector<KilnTensorMap> x_maps(const Instance& in, const void* x0) const {
    std::vector<KilnTensorMap> maps;
    const unsigned long long e = elem(), c = (unsigned long long)in.C;
    if (in.flat) // one 2-D map of x as [N * H * W][C], boxes of 64 * CONSUMERS rows
      return {map_of(x0, elem(), 2, {c, (unsigned long long)in.N * in.H * in.W},
                     {unsigned(in.swizzle) / elem(), unsigned(64 * in.CONSUMERS / in.cluster_n)},
                     in.swizzle)};
    if (in.im2col) { // one im2col map, C W H N: the taps' first positions, traversed by stride
      KilnTensorMap m =
          map_of(x0, elem(), 4,
                 {c, (unsigned long long)in.W, (unsigned long long)in.H, (unsigned long long)in.N},
                 {}, in.swizzle);
      m.mode = KILN_TMA_IM2COL;
      m.im2col.channels = (unsigned short)(in.swizzle / elem());
      m.im2col.pixels = (unsigned short)(64 * in.CONSUMERS);
      m.im2col.lower[0] = (signed char)-in.PW;
      m.im2col.lower[1] = (signed char)-in.PH;
      m.im2col.upper[0] = (signed char)(-in.PW + (OW - 1) * in.SW - (in.W - 1));
      m.im2col.upper[1] = (signed char)(-in.PH + (OH - 1) * in.SH - (in.H - 1));
      const int es[4] = {1, in.SW, in.SH, 1};
      for (int d = 0; d < 4; ++d)
        m.im2col.element_strides[d] = (unsigned char)es[d];
      return {m};
    }
    if (in.row_tiles) { // one 3-D map: rows 0, SH, ... of every image as one sequence
      KilnTensorMap m = map_of(
          x0, elem(), 3,
          {c, (unsigned long long)((in.W + in.SW - 1) / in.SW), (unsigned long long)in.N * OH},
          {unsigned(in.swizzle) / elem(), unsigned(in.TQ), unsigned(in.TP)}, in.swizzle);
      m.strides[1] = in.SW * c * e;
      m.strides[2] = (unsigned long long)in.SH * in.W * c * e;
      return {m};
    }
    for (int ph = 0; ph < in.SH; ++ph)
      for (int pw = 0; pw < in.SW; ++pw) {
        const auto* at =
            static_cast<const std::uint8_t*>(x0) + (std::size_t(ph) * in.W + pw) * c * e;
        KilnTensorMap m = map_of(
            at, elem(), 4,
            {c, (unsigned long long)((in.W - pw + in.SW - 1) / in.SW),
             (unsigned long long)((in.H - ph + in.SH - 1) / in.SH), (unsigned long long)in.N},
            {unsigned(in.swizzle) / elem(), unsigned(in.TQ), unsigned(in.TP / in.cluster_n), 1},
            in.swizzle);
        m.strides[1] = in.SW * c * e;
        m.strides[2] = (unsigned long long)in.SH * in.W * c * e;
        m.strides[3] = (unsigned long long)in.H * in.W * c * e;
        maps.push_back(m);
      }
    return maps;
  }
  KilnTensorMap w_map(const Instance& in, const void* at) const {
    return map_of(at, elem(), 2, {(unsigned long long)K, (unsigned long long)in.O},
                  {unsigned(in.swizzle) / elem(), unsigned(in.BN / in.cluster_m)}, in.swizzle);
  }
  // Blocks of a persistent launch: `want`, rounded down to whole clusters (at least one).
  static unsigned blocks(const Instance& in, unsigned tiles, unsigned want) {
    const unsigned c = unsigned(in.cluster());
    return std::max(std::min(tiles, want) / c * c, c);
  }
  // Output tiles (the template's TILES); a launch of fewer blocks is persistent.
  unsigned tiles(const Instance& in) const {
    if (in.flat || in.im2col)
      return unsigned((in.N * OH * OW + 64 * in.CONSUMERS - 1) / (64 * in.CONSUMERS) *
                      ((in.O + in.BN - 1) / in.BN));
    if (in.row_tiles)
      return unsigned((in.N * OH + in.TP - 1) / in.TP * ((in.O + in.BN - 1) / in.BN));
    return unsigned(in.N * ((OH + in.TP - 1) / in.TP) * ((OW + in.TQ - 1) / in.TQ) *
                    ((in.O + in.BN - 1) / in.BN));
  }
  static unsigned threads(const Instance& in) { return unsigned(128 * (1 + in.CONSUMERS)); }
  static std::size_t smem(const Instance& in) {
    const int barriers = in.dtype == 2 ? 24 : 16; // tf32: a third barrier per stage
    // The epilogue's staging where y's channel groups are 16-byte aligned (VECTOR_Y; no
    // instance has a pitched y).
    const int per_warp = in.bias || in.residual ? 2 * (16 * 128 + 128) : 16 * 128;
    const int staging = in.O % 8 == 0 ? 4 * in.CONSUMERS * per_warp : 0;
    return std::size_t(1024 + in.STAGES * (64 * in.CONSUMERS + in.BN) * in.swizzle * in.kblocks +
                       staging + barriers * in.STAGES + (in.pingpong ? 16 : 0));
  }

  // max |y - ref| / (|ref| + 1) over y, against the float64 convolution; every y finite.
  double error(const Instance& in) const {
    // What the tensor cores multiply: f16 and bf16 operands as they are; for tf32 a float
    // rounded to 10 mantissa bits, ties away (the kernel's cvt.rna before its wgmmas, which
    // would otherwise drop the low 13 bits), so the products here are the kernel's and the
    // tolerance covers float accumulation and y's rounding only.
    auto operand = [&](double v) {
      if (in.dtype != 2) return v;
      const std::uint32_t u = std::bit_cast<std::uint32_t>(float(v));
      return double(std::bit_cast<float>((u + 0x1000u) & 0xffffe000u));
    };
    double worst = 0;
    for (int n = 0; n < in.N; ++n)
      for (int p = 0; p < OH; ++p)
        for (int q = 0; q < OW; ++q)
          for (int o = 0; o < in.O; ++o) {
            double acc = 0;
            for (int r = 0; r < in.KH; ++r)
              for (int s = 0; s < in.KW; ++s) {
                const int h = in.SH * p - in.PH + r, ww = in.SW * q - in.PW + s;
                if (h < 0 || h >= in.H || ww < 0 || ww >= in.W) continue;
                for (int ci = 0; ci < in.C; ++ci)
                  acc += operand(x.get(((std::size_t(n) * in.H + h) * in.W + ww) * in.C + ci)) *
                         operand(w.get(std::size_t(o) * K + (r * in.KW + s) * in.C + ci));
              }
            const std::size_t at = ((std::size_t(n) * OH + p) * OW + q) * in.O + o;
            if (in.bias) acc += bias.get(std::size_t(o));
            if (in.residual) acc += res.get(at);
            if (in.relu) acc = acc > 0 ? acc : 0;
            const double got = y.get(at);
            REQUIRE(std::isfinite(got)); // every element written
            worst = std::max(worst, std::fabs(got - acc) / (std::fabs(acc) + 1.0));
          }
    return worst;
  }
};

} // namespace hopper_test
