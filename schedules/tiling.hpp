// The tiling planner of segmented fused tiling (SFT; Xu et al., CC 2022, "Training of Deep
// Learning Pipelines on Memory-Constrained GPUs via Segmented Fused-Tiled Execution";
// DESIGN.md 5.2). A segment of windowed ops (convolution, pooling, elementwise, add) is run
// tile by tile: the segment output is split into disjoint tiles, and each tile's regions of
// every op and of the segment input are derived backwards from the output tile. Halos are
// real data computed by the tile itself; zero padding is used only at the true image border.
//
// Regions are half-open intervals per axis (h, w). THE REGION RULE, per axis:
//   An op with window (k, s, p, d) that produces output rows [lo, hi) from an input of n rows
//   needs input rows [lo*s - p, (hi-1)*s - p + (k-1)*d + 1) clamped to [0, n). Rows outside
//   [0, n) are the op's padding (zero for convolution and average pooling, ignored by max
//   pooling), never data. An empty output range needs nothing; a clamped range that is empty
//   needs nothing (every tap of the window lies in the padding).
//   An op with several inputs (add) applies its window to each input; all inputs have the
//   same size, so with the 1x1 window of add each input needs the output's rows.
//   A value consumed by several ops of the segment gets the bounding union (per axis, the
//   smallest interval holding every non-empty need) of what its consumers need in the tile.
//   A consumer whose region in the tile is empty needs nothing.
//   The op `output` computes exactly the output tile; every other op computes exactly the
//   bounding union of what its consumers need, so ops not on a path to the output compute
//   nothing (an empty region). The segment input region is what its consumers need.
// The rule works from output indices, so ceil-mode pooling (one more output than floor mode,
// whose last window starts inside the image or its left padding) needs nothing special: that
// window's rows past the image are padding and are clamped away.
//
// Regions are products of per-axis intervals, so a region is empty when either axis is; the
// canonical empty region is Region{} (all zero).
#pragma once

#include "schedules/infeasible.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::sched {

// One spatial axis of an op's window. Elementwise ops and add use the default (1, 1, 0, 1).
struct Window {
  int64_t kernel = 1, stride = 1, padding = 0, dilation = 1;
};

struct SegOp {
  std::string name;
  std::array<Window, 2> window{}; // [0] = h, [1] = w
  std::vector<int> inputs;        // -1 = the segment input, else an earlier op
  int64_t channels = 1;           // of its output
  int64_t element_bytes = 4;      // of its output
  int64_t out_h = 0, out_w = 0;
  // Max pooling and the like: padding is ignored rather than zero. It changes no region;
  // carried for executors and callers.
  bool pool_max_like = false;
  // What its backward reads besides its output's gradient (convolution: its input, for the
  // weight gradient; relu: its output; max pooling: its input; add, average pooling:
  // neither). The training working set keeps only values some backward reads.
  bool backward_reads_input = true, backward_reads_output = true;
};

struct Segment {
  int64_t in_h = 0, in_w = 0, in_channels = 1, element_bytes = 4; // the segment input
  std::vector<SegOp> ops; // topological: every input precedes its consumer
  int output = 0;         // the op whose value leaves the segment, usually the last

  // Throws std::invalid_argument naming the op and field: no ops; sizes, channels or
  // element sizes < 1 or absurd (sides up to 2^31, window fields up to 2^24, every tensor
  // of the segment together up to 2^60 bytes); inputs missing, not -1 or an earlier op, or
  // of different sizes; per axis, a dilated kernel that does not fit in the padded input or
  // an out size whose last window starts past the padded input; output out of range. Out
  // sizes are the caller's: kiln's ops compute them with the one output-size rule
  // (runtime/op.hpp's window_out); the planner needs only that every window starts inside
  // the padded input (a window overhanging its end, as in ceil mode, is clamped).
  void validate() const;
};

// [lo, hi); empty when lo >= hi.
struct Range {
  int64_t lo = 0, hi = 0;
  bool empty() const { return lo >= hi; }
  int64_t size() const { return empty() ? 0 : hi - lo; }
  bool operator==(const Range&) const = default;
};

struct Region {
  Range h, w;
  bool empty() const { return h.empty() || w.empty(); }
  int64_t area() const { return empty() ? 0 : h.size() * w.size(); }
  bool operator==(const Region&) const = default;
};

// Whether every point of `inner` lies in `outer` (an empty inner lies in anything).
bool contains(const Region& outer, const Region& inner);
// The bounding union: per axis the smallest interval holding both; an empty operand is
// ignored; two empty operands give Region{}.
Region hull(const Region& a, const Region& b);
std::string to_string(const Region& r); // "[0,7)x[0,5)", "empty"

// Tile boundaries on the segment output: tile (i, j) covers rows [h_bounds[i], h_bounds[i+1])
// and columns [w_bounds[j], w_bounds[j+1]). Tiles are numbered row-major: i * cols() + j.
struct Tiling {
  std::vector<int64_t> h_bounds, w_bounds;
  int rows() const { return int(h_bounds.size()) - 1; }
  int cols() const { return int(w_bounds.size()) - 1; }
  int count() const { return rows() * cols(); }
  Region tile(int i, int j) const {
    return {{h_bounds[size_t(i)], h_bounds[size_t(i) + 1]},
            {w_bounds[size_t(j)], w_bounds[size_t(j) + 1]}};
  }
  // Throws std::invalid_argument unless both lists start at 0, end at the output size and
  // strictly increase.
  void validate(int64_t out_h, int64_t out_w) const;
};

// rows x cols tiles as even as possible: sizes differ by at most 1, larger tiles first
// (3 tiles over 10 rows: {0, 4, 7, 10}). Throws std::invalid_argument unless
// 1 <= rows <= out_h and 1 <= cols <= out_w.
Tiling even_tiling(int64_t out_h, int64_t out_w, int64_t rows, int64_t cols);
// Full tile_h x tile_w tiles, then the remainder (tile sizes past the output give one tile).
// Throws std::invalid_argument for sizes < 1.
Tiling sized_tiling(int64_t out_h, int64_t out_w, int64_t tile_h, int64_t tile_w);

struct TilePlan {
  Region out;                 // the output tile
  std::vector<Region> op_out; // per op: the region of its output this tile computes
  Region input;               // of the segment input
};

// What `op` needs of its input number `input_index` to produce `out`, an input of
// in_h x in_w (the region rule above). Throws std::invalid_argument for an input index out
// of range or an `out` outside [0, op.out_h) x [0, op.out_w).
Region needed_input(const SegOp& op, int input_index, const Region& out, int64_t in_h,
                    int64_t in_w);

// Every tile's regions, row-major. Validates the segment and the tiling (against the output
// op's size).
std::vector<TilePlan> plan_tiles(const Segment& s, const Tiling& t);

// Bytes are area * channels * element_bytes of a value's region.
struct TileCost {
  // Largest live bytes while computing one tile (max over tiles): ops run in topological
  // order; running op i adds its region; after it, each input whose last consumer (among
  // the ops computing something in this tile) is i is freed, except the output op's value,
  // which is kept; the tile's input region is resident throughout.
  int64_t peak_bytes = 0;
  int peak_tile = 0; // the tile that reaches it (the first such, row-major)
  // Sum over tiles of each op's computed area over its full area (out_h * out_w),
  // averaged over the ops on a path to the output weighted by their work
  // (out_h * out_w * channels). 1.0 = no halo overlap when every op's whole output is
  // needed; ops whose consumers skip some of it (strided 1x1 windows) can go below 1.
  double recompute_factor = 0;
  std::vector<double> op_recompute; // per op; 0 for ops not on a path to the output
};

TileCost tile_cost(const Segment& s, const Tiling& t);

// A tile's working set in a tiled training step (SFT: the forward keeps only the full
// segment input and output; the backward recomputes each tile's forward and backpropagates
// through it), as kiln's tile emitter runs it, max over tiles. The tile's forward runs the
// ops in order; an op reading the segment input, or a value several ops read, reads its own
// window (a copy the size of the value's region). Then the backward runs the ops that get a
// gradient in reverse order; op i adds the gradients of its inputs at their first
// contribution and one temporary the size of its largest input (a contribution covering
// part of that input's region). A value lives until its last reader: its consumers'
// forwards, its own backward when that reads its output, its sole consumer's backward when
// that reads its input; a window copy until its reader's forward or, when that op's backward
// reads its input, its backward; a gradient until its op's backward. The segment input gets
// no gradient. Excludes the full-size tensors (resident_bytes) and weights, weight gradients
// and kernel workspaces.
int64_t tile_train_peak(const Segment& s, const Tiling& t);

// Full segment input bytes + full segment output bytes (the tensors resident while tiles run).
int64_t resident_bytes(const Segment& s);

// resident_bytes + per-tile peak (tile_cost().peak_bytes, or tile_train_peak when train).
int64_t tiled_peak(const Segment& s, const Tiling& t, bool train);

// tiled_peak with one tile: the whole image in one piece. It counts the tile's input and
// output regions as buffers of their own next to the resident tensors (as every tiling
// does), so it is what choose_tiling compares a budget with, not what an untiled run that
// aliases them needs.
int64_t untiled_peak(const Segment& s, bool train);

// The fewest tiles (rows * cols, even_tiling) whose tiled_peak fits budget_bytes. Grids are
// tried by increasing count; for equal counts the one whose tiles are closest to square
// (|log(tile_h / tile_w)| smallest; then more rows first) comes first, and the first grid
// that fits wins. rows <= min(max_per_axis, out_h), cols <= min(max_per_axis, out_w).
// Throws Infeasible carrying the smallest tiled_peak over all those grids when none fits,
// std::invalid_argument for a bad segment or max_per_axis outside [1, 1024].
Tiling choose_tiling(const Segment& s, int64_t budget_bytes, bool train, int max_per_axis = 64);
// The same without the floor: nothing when no grid fits. Finding the floor evaluates every
// tile of every grid, which for long segments (halos covering the image) costs minutes.
std::optional<Tiling> fewest_tiles(const Segment& s, int64_t budget_bytes, bool train,
                                   int max_per_axis = 64);

} // namespace kiln::sched
