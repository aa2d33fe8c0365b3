// The spatial group of template families (see families/groups.hpp): pooling, upsampling
// and concatenation.
#include "generator/select/families/groups.hpp"
#include "generator/select/families/spatial/spatial_families.hpp"

namespace kiln {

std::vector<const Family*> spatial_families() {
  static const MaxPool2dFamily maxpool;
  static const AvgPool2dFamily avgpool;
  static const AdaptiveAvgPool2dFamily adaptive;
  static const Upsample2dFamily upsample;
  static const ConcatFamily concat;
  return {&maxpool, &avgpool, &adaptive, &upsample, &concat};
}

} // namespace kiln
