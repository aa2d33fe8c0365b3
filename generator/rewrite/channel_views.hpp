// Channel slices and concats as views (DESIGN.md 4.4, `view_offset`). A channel window of a
// tensor is contiguous when the batch is one image (NCHW; NHWC only where H*W == 1), so
//  - a channel slice (channel_slice.forward: ONNX Split/Slice, ShuffleNet's chunk; in
//    training also a concat.backward, input k's gradient as dy's channels) becomes a view of
//    its input at the slice's first channel, and its step goes;
//  - each input of a concat becomes a view of the concat's output at its channel offset: its
//    producer writes in place, and the concat's step goes once every input is a view;
//  - a concat whose inputs are the first inputs of a larger one (DenseNet's) becomes a view of
//    that one's first channels; one that is an input of another (Inception's branch pairs)
//    and whose inputs all became its views moves into that one whole.
// Kernels are unchanged: they get another pointer. Where the window is strided (a batch of
// images in NCHW, or NHWC with H*W > 1), a concat's input becomes a pitched view
// (Buffer::view_pitch) where only its producer and the concat (or concats nested in it, which
// then all become pitched views of its first channels) touch it, and kernels serve those
// steps through the pitch (`serves_pitched`: a kernel compiled for it on the target GPU,
// generate's; every step on the cpu reference, whose reads and writes follow the runs):
// DenseNet's convs and pools write into the block's last concat, its batchnorms read the
// nested ones. A strided slice copies (its readers read contiguous buffers).
// Wherever a view could change what a step reads or writes, the copy stays, with the reason
// recorded. The pass runs on inference and
// training plans (not under a budget: the views change lifetimes a budgeted schedule fixed),
// after the rewrites that restructure steps (fusion, layouts, sparse, conv+pool, split-K)
// and before kernels are assigned.
#pragma once

#include "runtime/plan.hpp"

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kiln {

// A view's first byte must keep the alignment of the widest access a kernel makes through
// its pointer (a 16-byte vector load, cp.async, a TMA map's global address).
inline constexpr int64_t kChannelViewAlignment = 16;

struct ChannelViewDecision {
  std::string node;   // the concat or channel_slice node
  std::string buffer; // a concat's input, or a slice's output
  bool view = false;  // became a view (no copy)
  std::string reason; // why the copy stays (empty for a view)
};

struct ChannelViews {
  int views = 0;         // buffers that became views
  int copies = 0;        // concat inputs and slices that still copy
  int steps_removed = 0; // copy steps the views made unnecessary
  std::vector<ChannelViewDecision> decisions;
};

// Whether step s of plan p, an argument of which has just become a pitched view, can be
// served (by a kernel that reads or writes through the pitch). Null: every step can (the cpu
// reference).
using ServesPitched = std::function<bool(const Plan& p, const Step& s)>;

// Rewrites an unfinished plan (before finish_plan) in place.
ChannelViews plan_channel_views(Plan& p, const ServesPitched& serves_pitched = nullptr);

nlohmann::ordered_json channel_views_json(const ChannelViews& v);

} // namespace kiln
