// Argument role lists that several functions' signatures share (FnSignature's spans point
// at them). A compacted activation (runtime/sparse_form.hpp) is written by sparse.compact
// (values, index, count, nnz: the form of its x) or by a producer of its own output y
// (y_values, y_index, y_count, y_nnz).
#pragma once

#include <string_view>

namespace kiln::roles {

using sv = std::string_view;

inline constexpr sv x[] = {"x"}, y[] = {"y"}, dx[] = {"dx"}, dy[] = {"dy"}, dw[] = {"dw"};
inline constexpr sv b[] = {"b"}, xs[] = {"x*"}, x_dy[] = {"x", "dy"}, y_dy[] = {"y", "dy"};
inline constexpr sv dy_w[] = {"dy", "w"}, x_w_b[] = {"x", "w", "b"}, x_w[] = {"x", "w"};
inline constexpr sv partial[] = {"partial"}, src[] = {"src"}, dst[] = {"dst"};
inline constexpr sv nnz[] = {"nnz"};
// A producer's output and the compacted form it may write of it (optional, y_nnz added to).
inline constexpr sv y_compacted[] = {"y", "y_values", "y_index", "y_count", "y_nnz"};
inline constexpr sv y_form[] = {"y_values", "y_index", "y_count", "y_nnz"}, y_nnz[] = {"y_nnz"};

// The TMA tensor maps a Hopper kernel reads (128-byte buffers tensor_map.encode writes): x's,
// one per row/column parity of a strided conv (up to 3 x 3), and w's (forward) or dy's (weight
// gradient).
inline constexpr sv tensor_maps[] = {"xmap0", "xmap1", "xmap2", "xmap3", "xmap4", "xmap5",
                                     "xmap6", "xmap7", "xmap8", "wmap",  "dymap"};

// Image-separable functions (FnDef::per_image): what their images share, and the per-image
// roles of those with a residual or a squeeze-excite gate.
inline constexpr sv weights_and_maps[] = {"w",     "b",     "xmap0", "xmap1", "xmap2", "xmap3",
                                          "xmap4", "xmap5", "xmap6", "xmap7", "xmap8", "wmap"};
inline constexpr sv x_y_residual_gate[] = {"x", "y", "residual", "gate"};
inline constexpr sv x_y[] = {"x", "y"}, dy_dx[] = {"dy", "dx"}, x_dy_dx[] = {"x", "dy", "dx"};

} // namespace kiln::roles
