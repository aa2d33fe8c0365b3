// templates/elementwise/channel_move.cuh: channel_shuffle forward and backward (the inverse
// shuffle) and channel_slice forward and backward (dy placed in its channels, zeros or the
// old values elsewhere), nchw, nhwc and [N, C]. Every variant compiles for sm_75, sm_80 and
// sm_90 and equals the reference on the emulator with all checks on (exactly, unless it
// accumulates: fp32 1e-5 then).
#include "tests/kernels/harness.hpp"

#include <doctest/doctest.h>

using namespace kiln;
using namespace kiln::test;

namespace {

std::string label(const char* fn, DType t, const Shape& x, Layout l, const std::string& extra) {
  return std::string(fn) + " " + std::string(dtype_name(t)) + " " + shape_str(x) +
         (l == Layout::nhwc ? " nhwc" : "") + extra;
}

StepSpec shuffle(DType t, Shape x, Layout l, int64_t groups, bool backward, bool acc) {
  StepSpec s{label(backward ? "channel_shuffle.backward" : "channel_shuffle.forward", t, x, l,
                   " g" + std::to_string(groups) + (acc ? " acc" : "")),
             backward ? Fn::channel_shuffle_backward : Fn::channel_shuffle_forward,
             OpKind::channel_shuffle};
  if (backward)
    s.args = {{"dy", x, t, l}, {"dx", x, t, l}};
  else
    s.args = {{"x", x, t, l}, {"y", x, t, l}};
  s.attrs.groups = groups;
  s.accumulate = acc;
  return s;
}

StepSpec slice(DType t, Shape x, Layout l, int64_t begin, int64_t end, bool backward, bool acc) {
  Shape y = x;
  y[1] = end - begin;
  StepSpec s{
      label(backward ? "channel_slice.backward" : "channel_slice.forward", t, x, l,
            " [" + std::to_string(begin) + ", " + std::to_string(end) + ")" + (acc ? " acc" : "")),
      backward ? Fn::channel_slice_backward : Fn::channel_slice_forward, OpKind::channel_slice};
  if (backward)
    s.args = {{"dy", y, t, l}, {"dx", x, t, l}};
  else
    s.args = {{"x", x, t, l}, {"y", y, t, l}};
  s.attrs.begin = begin;
  s.attrs.end = end;
  s.accumulate = acc;
  return s;
}

std::vector<StepSpec> specs() {
  const Layout nchw = Layout::nchw, nhwc = Layout::nhwc;
  std::vector<StepSpec> s;
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    s.push_back(shuffle(t, {2, 12, 3, 5}, nchw, 2, false, false));
    s.push_back(slice(t, {2, 12, 3, 5}, nhwc, 6, 12, false, false));
  }
  const DType f = DType::f32;
  s.push_back(shuffle(f, {2, 12, 3, 5}, nhwc, 3, false, false));
  s.push_back(shuffle(f, {3, 12}, nchw, 4, false, false));
  s.push_back(shuffle(f, {2, 12, 3, 5}, nchw, 3, true, false));
  s.push_back(shuffle(f, {2, 12, 3, 5}, nhwc, 2, true, true));
  s.push_back(slice(f, {2, 12, 3, 5}, nchw, 0, 6, false, false));
  s.push_back(slice(f, {3, 12}, nchw, 4, 9, false, false));
  s.push_back(slice(f, {2, 12, 3, 5}, nchw, 3, 9, true, false));
  s.push_back(slice(f, {2, 12, 3, 5}, nhwc, 6, 12, true, true));
  s.push_back(slice(f, {2, 12, 3, 5}, nchw, 0, 6, true, true));
  return s;
}

} // namespace

TEST_CASE("channel_move variants compile with NVRTC for sm_75, sm_80 and sm_90") {
  std::vector<std::string> unserved;
  const auto built = all_variants(specs(), {"t4", "a100", "h200"}, &unserved);
  for (const std::string& u : unserved)
    FAIL_CHECK("no variant for " << u);
  for (const std::string& f : nvrtc_failures(built))
    FAIL_CHECK(f);
}

TEST_CASE("channel_move variants match the reference on the emulator") {
  const auto built = all_variants(specs(), {"h200"});
  REQUIRE(built.size() >= specs().size());
  for (const KernelCheck& r : emu_checks(built, temp_dir("kiln-channel-move"))) {
    INFO(r.node << ": " << r.kernel << " rel " << r.rel << " " << r.error);
    CHECK(r.pass);
    // Moves are exact; accumulating ones add in f32 where the reference adds in double.
    if (r.node.find(" acc") == std::string::npos) CHECK(r.rel == 0);
  }
}
