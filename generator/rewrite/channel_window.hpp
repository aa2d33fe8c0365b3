// A window of channels [c, c + k) of a buffer as a view sees it (channel_views.cpp): where it
// starts and, where it is strided, its pitch (Buffer::view_pitch).
#pragma once

#include "runtime/plan.hpp"

#include <string>

namespace kiln {

// Elements per channel and image (H * W; 1 for [N, C]).
int64_t inner_of(const Shape& s);

// Why a window of b's channels is not contiguous ("" where it is): one image in NCHW, or one
// position as well in NHWC (channels innermost); `whole`: all of them, always contiguous.
std::string not_contiguous(const Buffer& b, bool whole);

// A channel window of b at channel c: its first element and, where strided, its pitch (the
// elements between consecutive images in NCHW, pixels in NHWC; 0 where contiguous).
struct Window {
  int64_t offset, pitch;
};
Window window_of(const Buffer& b, int64_t c);

// The channel a window of b at element `offset` starts at (window_of's inverse).
int64_t channel_of(const Buffer& b, int64_t offset);

} // namespace kiln
