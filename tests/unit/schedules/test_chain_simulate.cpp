// The chain problem's validation and the simulator: accounting by hand, and each rule broken.
#include "schedules/chain_schedule.hpp"

#include <cmath>
#include <doctest/doctest.h>
#include <stdexcept>

using namespace kiln::sched;

namespace {

Chain two_stages() {
  Chain c;
  c.input_bytes = 4;
  c.stages.push_back({"conv", 1, 2, 3, 5, 1, 2});
  c.stages.push_back({"loss", 3, 4, 2, 6, 0, 1});
  return c;
}

ChainOp fn(int i) { return {ChainOp::forward_none, i}; }
ChainOp fi(int i) { return {ChainOp::forward_input, i}; }
ChainOp fa(int i) { return {ChainOp::forward_all, i}; }
ChainOp bw(int i) { return {ChainOp::backward, i}; }

std::string error_of(const Chain& c, const std::vector<ChainOp>& ops) {
  const SimResult r = simulate(c, ops);
  CHECK_FALSE(r.ok);
  return r.error;
}

void check_throws_naming(const Chain& c, const std::string& a, const std::string& b) {
  try {
    c.validate();
    FAIL("validate accepted a bad chain");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    CHECK_MESSAGE(what.find(a) != std::string::npos, what);
    CHECK_MESSAGE(what.find(b) != std::string::npos, what);
  }
}

} // namespace

TEST_CASE("chain validation names the stage and the field") {
  two_stages().validate();
  Chain c = two_stages();
  c.stages[1].forward_time = -1;
  check_throws_naming(c, "stage 2 'loss'", "forward_time");
  c = two_stages();
  c.stages[0].backward_time = NAN;
  check_throws_naming(c, "stage 1 'conv'", "backward_time");
  c = two_stages();
  c.stages[0].backward_time = INFINITY;
  check_throws_naming(c, "stage 1", "backward_time");
  c = two_stages();
  c.stages[1].forward_temp_bytes = -5;
  check_throws_naming(c, "stage 2", "forward_temp_bytes");
  c = two_stages();
  c.stages[1].saved_bytes = 1;
  check_throws_naming(c, "stage 2", "saved_bytes (1) < output_bytes (2)");
  c = two_stages();
  c.input_bytes = -1;
  check_throws_naming(c, "chain", "input_bytes");
  c = two_stages();
  c.stages[1].saved_bytes = int64_t(1) << 60;
  check_throws_naming(c, "stage 2", "2^60");
  check_throws_naming(Chain{}, "chain", "no stages");
}

TEST_CASE("the simulator's accounting, by hand") {
  const Chain c = two_stages();
  // store-all: peaks 4+1+5, 9+0+6, 15+1+3 (d_1), 12+2+4 (d_0).
  SimResult r = simulate(c, {fa(1), fa(2), bw(2), bw(1)});
  REQUIRE_MESSAGE(r.ok, r.error);
  CHECK(r.peak_bytes == 19);
  CHECK(r.time == 10);
  // Checkpoint a_1 instead of abar_1: 4+1+3, 7+6, 13+1+3, free, 7+1+5, 12+2+4.
  r = simulate(c, {fi(1), fa(2), bw(2), free_op(Tensor::a, 1), fa(1), bw(1)});
  REQUIRE_MESSAGE(r.ok, r.error);
  CHECK(r.peak_bytes == 18);
  CHECK(r.time == 11);
  // forward_none releases its plain input; a second forward of a present a_i costs no output.
  Chain three = two_stages();
  three.stages.push_back({"x", 1, 1, 7, 7, 0, 0});
  r = simulate(three, {fi(1), fi(2), fn(2), fa(3), bw(3), free_op(Tensor::a, 2), fi(1), fa(2),
                       bw(2), free_op(Tensor::a, 1), fa(1), bw(1)});
  REQUIRE_MESSAGE(r.ok, r.error);
  // fi(2): 7+0+2 = 9; fn(2): a_2 is present, so 9, then a_1 released (mem 6); fa(3): 13.
  // bw(3): 13+0+2 = 15 -> mem 4+2+2 = 8; free a_2: 6; fi(1): 6+1+3 = 10 -> 9; fa(2): 15;
  // bw(2): 15+1+3 = 19 -> 4+3+3 = 10; free a_1: 7; fa(1): 13 -> 12; bw(1): 18.
  CHECK(r.peak_bytes == 19);
  CHECK(r.time == 1 + 3 + 3 + 1 + 1 + 1 + 3 + 4 + 1 + 2);
  // forward_all replaces a plain a_i and counts the saved set on top during the op.
  r = simulate(c, {fi(1), fa(1), fa(2), bw(2), bw(1)});
  REQUIRE_MESSAGE(r.ok, r.error);
  CHECK(r.peak_bytes == 19); // fa(1) peaks at 7+1+5 = 13, then memory is 9 as in store-all
}

TEST_CASE("the simulator rejects each kind of invalid schedule with its message") {
  const Chain c = two_stages();
  auto has = [&](const std::vector<ChainOp>& ops, const std::string& what) {
    const std::string e = error_of(c, ops);
    CHECK_MESSAGE(e.find(what) != std::string::npos, e);
  };
  has({fn(2)}, "op 0 (forward_none 2): input a_1 absent");
  has({fa(1), fa(2), bw(2), bw(2)}, "op 3 (backward 2): backward 2 already ran");
  has({fa(1), fa(2), bw(1)}, "op 2 (backward 1): backward out of order: backward 2 must run first");
  has({fa(1), bw(2)}, "op 1 (backward 2): abar_2 absent");
  has({fa(1), fa(2), bw(2), free_op(Tensor::d, 1), bw(1)},
      "op 4 (backward 1): gradient d_1 absent");
  has({fa(1), free_op(Tensor::abar, 2)}, "op 1 (free abar_2): abar_2 is not present");
  has({fa(1), fa(2), free_op(Tensor::abar, 1)}, "abar_1 holds a_1, still needed by backward 2");
  has({fa(1), free_op(Tensor::a, 1)}, "a_1 is part of abar_1");
  has({free_op(Tensor::a, 0)}, "a_0 can be freed only after backward 1");
  has({fi(1), fa(2), free_op(Tensor::a, 1)}, "a_1 is still needed by backward 2");
  has({fa(1), fa(1)}, "abar_1 is already present");
  has({fa(1), fa(2), bw(2), fa(2)}, "stage 2 is forwarded after its backward ran");
  has({fa(3)}, "no stage 3");
  has({bw(0)}, "no stage 0");
  has({free_op(Tensor::d, 2)}, "no tensor d_2");
  has({fa(1), fa(2)}, "incomplete schedule: backward 2 never ran");
  has({fa(1), fa(2), bw(2), bw(1), free_op(Tensor::d, 0)}, "d_0 is not present at the end");
  // A complete schedule may free a_0 after backward 1.
  CHECK(simulate(c, {fa(1), fa(2), bw(2), bw(1), free_op(Tensor::a, 0)}).ok);
}

TEST_CASE("ops print as the schedule format names them") {
  CHECK(to_string(fn(3)) == "forward_none 3");
  CHECK(to_string(fi(1)) == "forward_input 1");
  CHECK(to_string(free_op(Tensor::abar, 2)) == "free abar_2");
  CHECK(to_string(free_op(Tensor::d, 0)) == "free d_0");
}
