// The checking aids and the planted bugs of the issue: each must be caught.
#include "emu_fixture.hpp"

#include <cmath>

using namespace emu_test;

namespace {

constexpr unsigned kAll = KILN_EMU_CHECK_ALL;

struct Gemm {
  int M = 45, N = 38, K = 45; // uneven tiles on every side
  std::vector<float> A, B, C, want;
  std::vector<int> dims{M, N, K};
  Gemm() : A(std::size_t(M * K)), B(std::size_t(K * N)), C(std::size_t(M * N)), want(C.size()) {
    for (std::size_t i = 0; i < A.size(); ++i)
      A[i] = float(int(i * 37 % 17) - 8) * 0.125f;
    for (std::size_t i = 0; i < B.size(); ++i)
      B[i] = float(int(i * 11 % 13) - 6) * 0.25f;
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        double s = 0.0;
        for (int k = 0; k < K; ++k)
          s += double(A[std::size_t(m * K + k)]) * B[std::size_t(k * N + n)];
        want[std::size_t(m * N + n)] = float(s);
      }
  }
  std::string run(const char* kernel, unsigned checks, unsigned workers = 1) {
    std::fill(C.begin(), C.end(), NAN);
    return try_launch(
        kernel,
        config({unsigned(N + 15) / 16, unsigned(M + 15) / 16, 1}, {16, 16, 1}, checks, workers),
        {buf(A, "A"), buf(B, "B"), buf(C, "C"), buf(dims, "dims")});
  }
  bool correct() const {
    for (std::size_t i = 0; i < C.size(); ++i)
      if (!(std::fabs(C[i] - want[i]) <= 1e-5f * (1.0f + std::fabs(want[i])))) return false;
    return true;
  }
};

} // namespace

TEST_CASE("the tiled GEMM is correct and clean under every check") {
  Gemm g;
  for (unsigned workers : {1u, 2u}) {
    const std::string r = g.run("gemm_tiled_f32", kAll, workers);
    INFO(r);
    CHECK(r.empty());
    CHECK(g.correct());
  }
  CHECK(g.run("gemm_tiled_f32", 0).empty());
  CHECK(g.correct());
}

TEST_CASE("planted bug: a tiled kernel missing its __syncthreads after the loads") {
  Gemm g;
  const std::string race = g.run("gemm_tiled_no_sync_after_load", KILN_EMU_CHECK_RACE);
  INFO(race);
  CHECK(contains(race, "shared-memory race"));
  CHECK(contains(race, "shared array 'As'"));
  const std::string init = g.run("gemm_tiled_no_sync_after_load", KILN_EMU_CHECK_SHARED_INIT);
  CHECK(contains(init, "which no thread of this block has written"));
  CHECK(g.run("gemm_tiled_no_sync_after_load", 0).empty()); // unchecked: it runs...
  CHECK_FALSE(g.correct());                                 // ...and computes garbage
}

TEST_CASE("planted bug: a tiled kernel missing its __syncthreads after the compute") {
  Gemm g;
  const std::string race = g.run("gemm_tiled_no_sync_after_compute", kAll);
  INFO(race);
  CHECK(contains(race, "shared-memory race"));
  CHECK(contains(race, "wrote it since the last __syncthreads"));
  CHECK(g.run("gemm_tiled_no_sync_after_compute", 0).empty());
  CHECK_FALSE(g.correct());
}

TEST_CASE("planted bug: an off-by-one tile bound reads past the buffer") {
  Gemm g;
  const std::string r = g.run("gemm_tiled_off_by_one", kAll);
  INFO(r);
  CHECK(contains(r, "out-of-bounds global access"));
  CHECK(contains(r, "argument 0 'A'"));
  CHECK(contains(r, "element 2025")); // M * K: one past the end
}

TEST_CASE("out-of-bounds global reads and writes name the argument") {
  std::vector<float> in(100, 1.0f), out(100);
  std::vector<int> n{100};
  const std::string rd = try_launch("oob_read", config({4, 1, 1}, {32, 1, 1}),
                                    {buf(in, "in"), buf(out, "out"), buf(n, "n")});
  INFO(rd);
  CHECK(contains(rd, "kernel 'oob_read': block (3,0,0), thread (4,0,0)"));
  CHECK(contains(rd, "argument 0 'in' (400 bytes = 100 elements of 4 bytes)"));
  CHECK(contains(rd, "element 100"));
  const std::string wr = try_launch("oob_write", config({4, 1, 1}, {32, 1, 1}),
                                    {buf(in, "in"), buf(out, "out"), buf(n, "n")});
  INFO(wr);
  CHECK(contains(wr, "argument 1 'out'"));
  CHECK(contains(wr, "element 100"));
  // Without the bounds check the launch goes through (the buffers have slack on the heap).
  std::vector<float> big_in(200, 1.0f), big_out(200);
  CHECK(try_launch("oob_read", config({4, 1, 1}, {32, 1, 1}, 0),
                   {buf(big_in, "in"), buf(big_out, "out"), buf(n, "n")})
            .empty());
}

TEST_CASE("the lowest failing block is reported, whatever the number of workers") {
  std::vector<float> in(32 * 16, 1.0f), out(32 * 16);
  for (unsigned workers : {1u, 4u}) {
    const std::string r =
        try_launch("oob_in_blocks_5_and_9", config({16, 1, 1}, {32, 1, 1}, kAll, workers),
                   {buf(in, "in"), buf(out, "out")});
    CHECK(contains(r, "block (5,0,0), thread (0,0,0)"));
  }
}

TEST_CASE("shared memory: reads of never-written bytes and out-of-bounds indices") {
  std::vector<float> out(64);
  const std::string r =
      try_launch("uninit_shared", config({1, 1, 1}, {64, 1, 1}), {buf(out, "out")});
  INFO(r);
  CHECK(contains(r, "thread (62,0,0)"));
  CHECK(contains(r, "read of shared array 's'"));
  CHECK(contains(r, "byte 252"));
  CHECK(try_launch("uninit_shared", config({1, 1, 1}, {64, 1, 1}, KILN_EMU_CHECK_BOUNDS),
                   {buf(out, "out")})
            .empty());
  const std::string oob =
      try_launch("shared_oob", config({1, 1, 1}, {64, 1, 1}), {buf(out, "out")});
  INFO(oob);
  CHECK(contains(oob, "thread (63,0,0)"));
  CHECK(contains(oob, "out-of-bounds shared access at element 64"));
  CHECK(contains(oob, "shared array 'tile'"));
}

TEST_CASE("barriers in divergent code and deadlocks are reported, not hung on") {
  std::vector<float> out(32);
  const std::string div =
      try_launch("divergent_barrier", config({1, 1, 1}, {32, 1, 1}), {buf(out)});
  INFO(div);
  CHECK(contains(div, "barrier divergence"));
  CHECK(contains(div, "threads 0-15 wait at __syncthreads"));
  CHECK(contains(div, "threads 16-31 wait at __syncthreads"));
  const std::string dead =
      try_launch("shuffle_barrier_deadlock", config({1, 1, 1}, {32, 1, 1}, 0), {buf(out)});
  INFO(dead);
  CHECK(contains(dead, "deadlock"));
  CHECK(contains(dead, "threads 0-15 wait at __shfl_xor_sync"));
  CHECK(contains(dead, "threads 16-31 wait at __syncthreads"));
  const std::string exited =
      try_launch("shuffle_exited_lanes", config({1, 1, 1}, {32, 1, 1}), {buf(out)});
  CHECK(contains(exited, "every lane must arrive"));
  std::vector<int> iout(32);
  const std::string mixed =
      try_launch("mixed_collectives", config({1, 1, 1}, {32, 1, 1}), {buf(iout)});
  INFO(mixed);
  CHECK(contains(mixed, "different warp collectives"));
  CHECK(contains(mixed, "threads 0-15 wait at __shfl_xor_sync"));
  CHECK(contains(mixed, "threads 16-31 wait at __ballot_sync"));
}

TEST_CASE("misuse the emulator can only see at run time") {
  std::vector<int> out(32);
  const std::string mask = try_launch("partial_mask", config({1, 1, 1}, {32, 1, 1}), {buf(out)});
  CHECK(contains(mask, "mask 0x0000ffff"));
  const std::string trap = try_launch("trap", config({2, 1, 1}, {32, 1, 1}), {buf(out)});
  CHECK(contains(trap, "block (0,0,0), thread (3,0,0): __trap() called"));
}

TEST_CASE("__syncwarp orders a warp's shared-memory exchange; without it, a race") {
  // The Hopper conv's epilogue stages each warp's rows through shared memory between two
  // sync_warp()s (conv/hopper/epilogue.cuh).
  std::vector<int> in(64), out(128);
  for (int i = 0; i < 64; ++i)
    in[std::size_t(i)] = 3 * i + 1;
  auto run = [&](int mode) {
    std::vector<int> m{mode};
    std::fill(out.begin(), out.end(), -1);
    return try_launch("warp_exchange", config({1, 1, 1}, {64, 1, 1}, kAll, 1),
                      {buf(in, "in"), buf(out, "out"), buf(m, "mode")});
  };
  const std::string ok = run(1);
  INFO(ok);
  CHECK(ok.empty());
  for (int t = 0; t < 64; ++t) {
    const int from = 32 * (t / 32) + (t % 32 + 31) % 32;
    CHECK(out[std::size_t(2 * t)] == in[std::size_t(from)]);
    CHECK(out[std::size_t(2 * t + 1)] == 2 * in[std::size_t(from)]);
  }
  const std::string shared = run(4); // four lanes read a slot its owner then rewrites
  INFO(shared);
  CHECK(shared.empty());
  CHECK(out[2 * 33 + 1] == 2 * in[32 + 5]); // lane 1 of warp 1 read lane 5's second value
  const std::string none = run(0);
  INFO(none);
  CHECK(contains(none, "shared-memory race"));
  CHECK(contains(none, "reads it"));
  const std::string war = run(2); // the next lane's read, then this lane's write: no sync
  CHECK(contains(war, "shared-memory race"));
  CHECK(contains(war, "this thread writes it"));
  const std::string cross = run(3); // warp 0's slots: __syncwarp orders one warp only
  INFO(cross);
  CHECK(contains(cross, "shared-memory race"));
}
