// The tensor maps a Hopper conv instance reads (conv_wgmma.hpp's hopper_conv_maps): x's as its
// tiles read it (flat rows, folded taps, im2col, image rows or row/column parities), w as
// [O][KH * KW * C].
#include "generator/select/families/hopper/conv_wgmma.hpp"
#include "generator/select/families/hopper/nhwc_maps.hpp"
#include "generator/select/families/hopper/wgrad_wgmma.hpp"

#include <fmt/format.h>

namespace kiln {

std::vector<std::pair<std::string, TensorMapEncode>>
hopper_conv_maps(const Variant& v, const Plan& p, const Step& s) {
  if (is_hopper_wgrad(v)) return hopper_wgrad_maps(v, p, s);
  const Buffer& xb = p.buffers[s.need("x")];
  const Buffer& wb = p.buffers[s.need("w")];
  const int64_t es = int64_t(dtype_size(xb.dtype));
  const int64_t N = cfg_int_of(v, "N"), C = cfg_int_of(v, "C"), H = cfg_int_of(v, "H"),
                W = cfg_int_of(v, "W"), O = cfg_int_of(v, "O"), SH = cfg_int_of(v, "SH"),
                SW = cfg_int_of(v, "SW"), K = cfg_int_of(v, "KH") * cfg_int_of(v, "KW") * C;
  // A pitched x (a channel slice as a view): its pixels XP elements apart.
  const int64_t XP = xb.view_pitch > 0 ? xb.view_pitch : C;
  // Each box row is one swizzle row of channels, as candidates() chose it (SWIZZLE).
  const int64_t swizzle = row_swizzle(C * es);
  std::vector<std::pair<std::string, TensorMapEncode>> maps;
  const int64_t cn = cfg_int_or(v, "CLUSTER_N", 1), cm = cfg_int_or(v, "CLUSTER_M", 1);
  if (cfg_bool_of(v, "FLAT")) // x as [N * H * W][C], boxes of BM rows (a block's slice)
    maps.push_back({"xmap0", rows_map(xb, N * H * W, C, XP, swizzle, swizzle / es,
                                      64 * cfg_int_of(v, "CONSUMERS") / cn)});
  else if (const int64_t taps = cfg_int_or(v, "TAPS_ROW", 1); taps > 1) {
    // x's pixels as rows of `taps` of them, a pixel apart: [N][H][OW][taps * C] (the buffer's
    // own C and W: its shape, not the instance's).
    maps.push_back({"xmap0", overlapping_taps_map(xb, N, xb.shape[1], H, xb.shape[3], taps,
                                                  cfg_int_of(v, "OW"), swizzle / es,
                                                  cfg_int_of(v, "TQ"), cfg_int_of(v, "TP"))});
  } else if (cfg_bool_of(v, "IM2COL")) // the taps' first positions, a tile's pixels a copy
    maps.push_back(
        {"xmap0", *im2col_map(xb, N, C, H, W, SH, SW, cfg_int_of(v, "PH"), cfg_int_of(v, "PW"),
                              cfg_int_of(v, "OH"), cfg_int_of(v, "OW"), XP, swizzle, swizzle / es,
                              64 * cfg_int_of(v, "CONSUMERS"))});
  else if (cfg_bool_of(v, "ROW_TILES")) // the images' rows SH apart as one sequence
    maps.push_back({"xmap0", image_rows_map(xb, N, C, H, W, SH, SW, XP, swizzle, swizzle / es,
                                            cfg_int_of(v, "TQ"), cfg_int_of(v, "TP"))});
  else {
    std::vector<TensorMapEncode> xs = parity_maps(xb, N, C, H, W, SH, SW, XP, swizzle, swizzle / es,
                                                  cfg_int_of(v, "TQ"), cfg_int_of(v, "TP") / cn);
    for (size_t i = 0; i < xs.size(); ++i)
      maps.push_back({fmt::format("xmap{}", i), std::move(xs[i])});
  }
  // w as [O][KH * KW * C], boxes of a block's slice of BN rows.
  maps.push_back({"wmap", rows_map(wb, O, K, K, swizzle, swizzle / es, cfg_int_of(v, "BN") / cm)});
  return maps;
}

} // namespace kiln
