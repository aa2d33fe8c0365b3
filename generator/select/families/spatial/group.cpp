// The spatial group of template families (see families/groups.hpp): pooling, resizing, padding,
// space to depth and concatenation.
#include "generator/select/families/groups.hpp"
#include "generator/select/families/spatial/spatial_families.hpp"

namespace kiln {

std::vector<const Family*> spatial_families() {
  static const MaxPool2dFamily maxpool;
  static const AvgPool2dFamily avgpool;
  static const AdaptiveAvgPool2dFamily adaptive;
  static const ResizeFamily resize;
  static const PadFamily pad;
  static const SpaceToDepthFamily space_to_depth;
  static const ConcatFamily concat;
  return {&maxpool, &avgpool, &adaptive, &resize, &pad, &space_to_depth, &concat};
}

} // namespace kiln
