// The execution model: launch geometry, barriers, static and dynamic shared memory, workers.
#include "emu_fixture.hpp"

#include <algorithm>
#include <numeric>
#include <thread>

using namespace emu_test;

TEST_CASE("built-in variables follow the launch geometry") {
  const std::array<unsigned, 3> grid{3, 2, 2}, block{8, 4, 2};
  const int per_block = 64, blocks = 12;
  std::vector<int> out(std::size_t(per_block * blocks * 12), -1);
  for (unsigned workers : {1u, 3u}) {
    launch("geometry", config(grid, block, KILN_EMU_CHECK_ALL, workers), {buf(out, "out")});
    for (int b = 0; b < blocks; ++b)
      for (int t = 0; t < per_block; ++t) {
        const int* o = &out[std::size_t((b * per_block + t) * 12)];
        const int want[12] = {t % 8, t / 8 % 4, t / 32, b % 3, b / 3 % 2, b / 6, 8, 4, 2, 3, 2, 2};
        for (int k = 0; k < 12; ++k)
          REQUIRE(o[k] == want[k]);
      }
  }
}

TEST_CASE("a block-wide reduction in shared memory needs its barriers") {
  const int blocks = 40;
  std::vector<float> x(std::size_t(blocks) * 256), out(blocks, -1.0f);
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = float(int(i * 7919 % 1000) - 500);
  for (unsigned checks : {0u, unsigned(KILN_EMU_CHECK_ALL)}) {
    launch("block_sum", config({blocks, 1, 1}, {256, 1, 1}, checks, 2),
           {buf(x, "x"), buf(out, "out")});
    for (int b = 0; b < blocks; ++b) {
      const float want = std::accumulate(x.begin() + b * 256, x.begin() + (b + 1) * 256, 0.0f);
      CHECK(out[std::size_t(b)] == want); // integers: exact in any order
    }
  }
}

TEST_CASE("static arrays and dynamic shared memory are separate; a loop's array persists") {
  const int blocks = 3, n = 128;
  std::vector<int> out(std::size_t(blocks * n), -1);
  launch("shared_mix", config({blocks, 1, 1}, {128, 1, 1}, KILN_EMU_CHECK_ALL, 1, 1024),
         {buf(out, "out")});
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < n; ++t) {
      const int r = n - 1 - t;
      const int want = (3 * r + b) + r + (1000 + (t + 1) % n) + r - 2 + 7 * ((t + 5) % n);
      REQUIRE(out[std::size_t(b * n + t)] == want);
    }
}

TEST_CASE("element operations through the shared-memory proxy") {
  std::vector<int> out(32 * 16, -99);
  launch("proxy_ops", config({1, 1, 1}, {32, 1, 1}), {buf(out, "out")});
  auto a = [](int t) { return 15 + 2 * t; }; // a[t] after the updates
  for (int t = 0; t < 32; ++t) {
    const int r = 31 - t;
    const int* o = &out[std::size_t(t * 16)];
    INFO("thread ", t);
    CHECK(o[0] == a(t));
    CHECK(o[1] == a(t));
    CHECK(o[2] == 0x7f);
    CHECK(o[3] == t + 1);
    CHECK(o[4] == std::max(a(r), 20));
    CHECK(o[5] == std::min(20, a(r)));
    CHECK(o[6] == std::max(a(t), a(r)));
    CHECK(o[7] == std::max(r + 1, 10));
    CHECK(o[8] == std::max(a(r), 25));
    CHECK(o[9] == (t < 16 ? a(r) : -1));
    CHECK(o[10] == a(t ^ 1));
    CHECK(o[11] == 1);
    CHECK(o[12] == int(a(r) < r + 1));
    CHECK(o[13] == (t + 1) + a(t));
    CHECK(o[14] == a(r));
    CHECK(o[15] == a(0) + 32);
  }
}

TEST_CASE("too little dynamic shared memory is an out-of-bounds shared access") {
  std::vector<int> out(128, -1);
  const std::string r = try_launch(
      "shared_mix", config({1, 1, 1}, {128, 1, 1}, KILN_EMU_CHECK_ALL, 1, 600), {buf(out, "out")});
  CHECK(contains(r, "dynamic"));
}

TEST_CASE("threads that return early no longer count at barriers") {
  for (int live : {1, 37, 200}) {
    std::vector<int> out(256, -1), l{live};
    launch("early_exit_barrier", config({1, 1, 1}, {256, 1, 1}), {buf(out, "out"), buf(l, "live")});
    for (int t = 0; t < live; ++t)
      CHECK(out[std::size_t(t)] == 3 * ((t + 2) % live) + 1);
    for (int t = live; t < 256; ++t)
      CHECK(out[std::size_t(t)] == -1);
  }
}

TEST_CASE("launches from several host threads at once") {
  const int blocks = 64;
  std::vector<float> x(std::size_t(blocks) * 256);
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = float(i % 5);
  std::vector<std::vector<float>> outs(4, std::vector<float>(blocks));
  std::vector<std::thread> threads;
  std::vector<std::string> reports(4);
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      reports[std::size_t(i)] =
          try_launch("block_sum", config({blocks, 1, 1}, {256, 1, 1}, KILN_EMU_CHECK_ALL, 2),
                     {buf(x, "x"), buf(outs[std::size_t(i)], "out")});
    });
  for (auto& t : threads)
    t.join();
  for (int i = 0; i < 4; ++i) {
    CHECK(reports[std::size_t(i)].empty());
    CHECK(outs[std::size_t(i)] == outs[0]);
  }
  CHECK(outs[0][0] == std::accumulate(x.begin(), x.begin() + 256, 0.0f));
}

TEST_CASE("barrier-heavy exchange gives the same result on any number of workers") {
  std::vector<int> rounds{20};
  std::vector<float> a(64 * 96), b(64 * 96);
  launch("exchange_rounds", config({64, 1, 1}, {96, 1, 1}, 0, 1),
         {buf(a, "out"), buf(rounds, "rounds")});
  launch("exchange_rounds", config({64, 1, 1}, {96, 1, 1}, KILN_EMU_CHECK_ALL, 4),
         {buf(b, "out"), buf(rounds, "rounds")});
  CHECK(a == b);
  // Host reference for one block.
  std::vector<float> v(96), s(96);
  for (int t = 0; t < 96; ++t)
    v[std::size_t(t)] = float(t);
  for (int r = 0; r < 20; ++r) {
    s = v;
    for (int t = 0; t < 96; ++t)
      v[std::size_t(t)] = 0.5f * (s[std::size_t(t)] + s[std::size_t((t + 1) % 96)]);
  }
  for (int t = 0; t < 96; ++t)
    CHECK(a[std::size_t(63 * 96 + t)] == v[std::size_t(t)]);
}

TEST_CASE("invalid launches are refused") {
  std::vector<float> out(64);
  CHECK(contains(try_launch("block_sum", config({1, 1, 1}, {2048, 1, 1}), {buf(out)}),
                 "invalid launch"));
  CHECK(contains(try_launch("block_sum", config({0, 1, 1}, {32, 1, 1}), {buf(out)}),
                 "invalid launch"));
  CHECK(contains(try_launch("block_sum", config({1, 1, 1}, {32, 1, 1}, 7, 1, 1 << 20), {buf(out)}),
                 "dynamic shared memory"));
  CHECK_THROWS_AS(module().kernel("no_such_kernel"), kiln::Error);
  CHECK(module().has_kernel("saxpy"));
  CHECK_THROWS_AS(kiln::EmuModule("/nonexistent/kernels.so"), kiln::Error);
}
