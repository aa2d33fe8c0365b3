// The checks ops' shape rules share (runtime/ops/<op>.cpp): sizes from untrusted files
// must be sane before anything is computed from them.
#pragma once

#include "runtime/op.hpp"

#include <string_view>

namespace kiln::shape_rules {

// a * b, or kiln::Error when the product overflows or is absurdly large.
int64_t mul(int64_t a, int64_t b);
void need_rank(const Shape& s, size_t rank, std::string_view what);
void check_positive(int64_t v, std::string_view name, int64_t limit = int64_t(1) << 24);
void check_positive(const Int2& v, std::string_view name);
void check_padding(const Attrs& a);
// A pool's padding is at most half its kernel (as PyTorch).
void check_pool_padding(const Attrs& a);
// [N, c, OH, OW] of a sliding k window (dilation d) over x [N, C, H, W]; kiln::Error when
// it is empty. `what` names the op in the message.
Shape window_shape(const Shape& x, int64_t c, const Attrs& a, const Int2& k, const Int2& d,
                   bool ceil_mode, std::string_view what);

} // namespace kiln::shape_rules
