// Segmented fused tiling (Xu et al., CC 2022) for a model: the segment of layers run tile by
// tile (a run of windowed layers from the model input whose values leave it only through
// its last layer), its problem for the tiling planner (schedules/tiling), and the
// plan steps of its tiles: every tile's input window copied out of the full input, each
// layer run on its tile's region with padding only at the image's true border, the output
// tile copied into the full output; in training, every tile recomputed in the backward and
// backpropagated, weight gradients summed over the tiles in a fixed order.
#pragma once

#include "generator/lower/plan_builder.hpp"
#include "generator/model/model.hpp"
#include "schedules/tiling.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

struct TiledSegment {
  std::vector<int> nodes; // the segment's layers (model node indices, topological)
  sched::Segment problem; // op i is nodes[i]
  sched::Tiling tiling;
  std::vector<sched::TilePlan> tiles;
  int output_node() const { return nodes[size_t(problem.output)]; }
  bool contains(int node) const;
};

// The longest segment, or nothing when the model starts with no tileable layer. Tileable:
// conv2d, relu, max and average pooling without ceil_mode, add, and (inference only)
// batchnorm.
std::optional<TiledSegment> find_tiled_segment(const Model& m, bool train);
// Where a segment may end, ascending: the layers of the tileable prefix whose value alone
// leaves the layers up to them. The segment of layers 0..end (end one of those), untiled.
std::vector<int> tiled_segment_ends(const Model& m, bool train);
TiledSegment tiled_segment_to(const Model& m, int end);

// Sets the tiling: `rows` x `cols` even tiles, or the fewest that fit `budget_bytes`.
void tile_evenly(TiledSegment& s, int64_t rows, int64_t cols);
void tile_within(TiledSegment& s, int64_t budget_bytes, bool train);
// "4x4" or "8" (square); throws kiln::Error otherwise.
std::pair<int64_t, int64_t> parse_tiles(const std::string& text);

// Emits a segment's steps into a plan being built.
class TileEmitter {
public:
  struct Hooks {
    std::function<int(int node, const char* suffix)> param;      // parameter buffer
    std::function<int(int node, const char* suffix)> param_grad; // its gradient buffer, -1 if none
  };
  TileEmitter(const Model& m, const TiledSegment& s, PlanBuilder& b, Hooks hooks);

  // Every tile's forward, reading the full `input`, writing its tile of the full `output`.
  void forward(int input, int output, bool train);
  // Training: per tile, recompute its forward and backpropagate `dy` (the gradient of the
  // full output); weight gradients are summed over tiles in tile order.
  void backward(int input, int dy);

private:
  struct TileValues {
    std::vector<int> buffer; // per op: its region's buffer, -1 when it computes nothing
    std::vector<std::vector<int>> inputs; // per op: the buffers it read (its windows of its inputs)
  };
  TileValues forward_tile(int t, int input, bool train);
  // A buffer holding exactly `need` of a value whose buffer `have` covers `region`.
  int window(int have, const sched::Region& region, const sched::Region& need,
             const std::string& name);
  int fresh(const std::string& name, const Shape& shape);
  Attrs tile_attrs(int op, const sched::Region& out, const sched::Region& in) const;
  sched::Region value_region(const sched::TilePlan& tp, int ref) const; // ref -1: segment input
  int64_t value_h(int ref) const;
  int64_t value_w(int ref) const;

  class TileSite;

  const Model& m_;
  const TiledSegment& s_;
  PlanBuilder& b_;
  Hooks hooks_;
  std::vector<char> written_; // per model node: its parameter gradients got a first value
};

} // namespace kiln
