// Thread-block clusters in the emulator (kernels/cluster.cpp): ranks and sizes, cluster_sync
// as a barrier of every CTA, a multi-stage ring whose CTAs multicast their parts of each tile
// into one another (checked against sums computed here), results independent of the number
// of workers, and planted bugs each reported.
#include "emu_fixture.hpp"

#include "runtime/emu/tensor_map.h"

#include <cstring>

using namespace emu_test;

namespace {

kiln::EmuLaunchConfig cluster_config(std::array<unsigned, 3> grid, std::array<unsigned, 3> cluster,
                                     unsigned threads, unsigned workers = 1, std::size_t smem = 0) {
  kiln::EmuLaunchConfig c = config(grid, {threads, 1, 1}, KILN_EMU_CHECK_ALL, workers, smem);
  c.cluster = cluster;
  return c;
}

// The [rows, 32] float tensor of cluster_pipeline and its map (box 32 x 16 / n).
struct Ring {
  int tiles, clusters, n, rows;
  std::vector<float> x;
  std::vector<KilnTensorMap> map = std::vector<KilnTensorMap>(1);
  Ring(int tiles_, int clusters_, int n_)
      : tiles(tiles_), clusters(clusters_), n(n_), rows(16 * tiles_ * clusters_ - 5) {
    x.resize(std::size_t(rows) * 32);
    for (std::size_t i = 0; i < x.size(); ++i)
      x[i] = float(int(i * 37 % 101) - 50) * 0.25f;
    std::memset(map.data(), 0, sizeof(KilnTensorMap));
    map[0] = KilnTensorMap{
        x.data(), {32, (unsigned long long)rows}, {4, 128}, {32, unsigned(16 / n)}, 2, 4, 0, 0};
  }
  std::string run(int flags, unsigned workers, std::vector<float>& out,
                  const char* kernel = "cluster_pipeline") {
    std::vector<int> p = {tiles, flags};
    out.assign(std::size_t(clusters * n * tiles * 32), -1.0f);
    return try_launch(kernel,
                      cluster_config({unsigned(clusters * n), 1, 1}, {unsigned(n), 1, 1}, 64,
                                     workers, 3 * 16 * 32 * 4),
                      {buf(map, "map"), buf(x, "tensor"), buf(out, "out"), buf(p, "params")});
  }
  // Column c of tile i of cluster q, summed (rows past the tensor read as zero).
  float want(int q, int i, int c) const {
    float s = 0.0f;
    for (int r = 0; r < 16; ++r) {
      const int row = 16 * (q * tiles + i) + r;
      s += row < rows ? x[std::size_t(row) * 32 + std::size_t(c)] : 0.0f;
    }
    return s;
  }
};

} // namespace

TEST_CASE("cluster ranks and sizes: x fastest within the cluster; one without a cluster") {
  std::vector<int> flags = {0};
  struct Case {
    std::array<unsigned, 3> grid, cluster;
  };
  for (const Case& k :
       {Case{{4, 2, 1}, {2, 1, 1}}, Case{{8, 1, 2}, {4, 1, 1}}, Case{{4, 4, 1}, {2, 2, 1}},
        Case{{3, 2, 1}, {1, 1, 1}}, Case{{3, 1, 1}, {0, 0, 0}}})
    for (unsigned workers : {1u, 3u}) {
      CAPTURE(k.cluster[0]);
      CAPTURE(k.cluster[1]);
      const unsigned blocks = k.grid[0] * k.grid[1] * k.grid[2];
      std::vector<std::uint32_t> out(blocks * 2, 99);
      launch("cluster_ids", cluster_config(k.grid, k.cluster, 64, workers),
             {buf(out, "out"), buf(flags, "flags")});
      const unsigned cx = std::max(1u, k.cluster[0]), cy = std::max(1u, k.cluster[1]);
      for (unsigned b = 0; b < blocks; ++b) {
        const unsigned x = b % k.grid[0], y = b / k.grid[0] % k.grid[1];
        CHECK(out[2 * b] == x % cx + cx * (y % cy));
        CHECK(out[2 * b + 1] == cx * cy);
      }
    }
}

TEST_CASE("cluster_sync is a barrier: it orders shared stores before loads in each CTA") {
  std::vector<int> out(8 * 64, -1), flags = {0};
  launch("cluster_sync_orders", cluster_config({8, 1, 1}, {2, 1, 1}, 64, 3),
         {buf(out, "out"), buf(flags, "flags")});
  for (int b = 0; b < 8; ++b)
    for (int t = 0; t < 64; ++t)
      REQUIRE(out[std::size_t(b * 64 + t)] == (t > 0 ? t - 1 : 0) * 3 + b % 2);
  flags[0] = 1; // planted: no cluster_sync between the stores and the loads
  const std::string r = try_launch("cluster_sync_orders", cluster_config({8, 1, 1}, {2, 1, 1}, 64),
                                   {buf(out, "out"), buf(flags, "flags")});
  INFO(r);
  CHECK(contains(r, "shared-memory race"));
  CHECK(contains(r, "block (0,0,0)"));
}

TEST_CASE("a deadlock across a cluster is reported with every CTA's waits") {
  std::vector<std::uint32_t> out(4 * 2);
  std::vector<int> flags = {1};
  const std::string r = try_launch("cluster_ids", cluster_config({4, 1, 1}, {2, 1, 1}, 64, 3),
                                   {buf(out, "out"), buf(flags, "flags")});
  INFO(r);
  CHECK(contains(r, "deadlock"));
  CHECK(contains(r, "CTA 0 of the cluster, block (0,0,0): threads 0-63 wait at cluster_sync"));
  CHECK(contains(r, "CTA 1 of the cluster, block (1,0,0): threads 0-63 wait at mbarrier 0"));
}

TEST_CASE("a multicast ring over clusters of 2 and 4 CTAs (and none), any number of workers") {
  for (int n : {2, 4, 1})
    for (unsigned workers : {1u, 3u}) {
      CAPTURE(n);
      CAPTURE(workers);
      Ring ring(7, 3, n);
      std::vector<float> out;
      const std::string r = ring.run(0, workers, out);
      INFO(r);
      REQUIRE(r.empty());
      for (int b = 0; b < 3 * n; ++b)
        for (int i = 0; i < ring.tiles; ++i)
          for (int c = 0; c < 32; ++c)
            REQUIRE(out[std::size_t((b * ring.tiles + i) * 32 + c)] == ring.want(b / n, i, c));
    }
}

TEST_CASE("planted bug: no final cluster_sync, a CTA exits while its peer still arrives on it") {
  Ring ring(7, 3, 2);
  std::vector<float> out;
  const std::string r1 = ring.run(1, 1, out), r3 = ring.run(1, 3, out);
  INFO(r1);
  CHECK(contains(r1, "of the cluster exits while CTA"));
  CHECK(contains(r1, "end the kernel with cluster_sync()"));
  CHECK((contains(r1, "block (0,0,0)") || contains(r1, "block (1,0,0)")));
  CHECK(r1 == r3); // the lowest failing block, whatever the number of workers
}

TEST_CASE("planted bug: a peer multicasts into a CTA that has exited") {
  Ring ring(1, 1, 2);
  ring.map[0].box[1] = 8;
  std::vector<float> out;
  const std::string r = ring.run(0, 1, out, "cluster_early_exit");
  INFO(r);
  CHECK(contains(r, "CTA 0 of the cluster has exited while CTA 1 still multicasts"));
  CHECK(contains(r, "end the kernel with cluster_sync()"));
}

TEST_CASE("planted bugs: a multicast mask or an arrival naming a CTA outside the cluster") {
  Ring ring(4, 2, 2);
  std::vector<float> out;
  const std::string mask = ring.run(4, 1, out);
  INFO(mask);
  CHECK(contains(mask, "CTA mask 0x7 names CTA 2, outside the cluster of 2 CTAs"));
  const std::string arrive = ring.run(8, 1, out);
  INFO(arrive);
  CHECK(contains(arrive, "mbarrier_arrive_cluster to CTA 2: the cluster has 2 CTAs"));
  Ring single(4, 2, 1); // without a cluster: a cluster of one
  const std::string one = single.run(8, 1, out);
  INFO(one);
  CHECK(contains(one, "mbarrier_arrive_cluster to CTA 1: the cluster has 1 CTA"));
}

TEST_CASE("planted bug: a producer refills a stage without its peers' release") {
  Ring ring(9, 2, 2);
  std::vector<float> out;
  const std::string r = ring.run(2, 1, out);
  INFO(r);
  int bad = 0;
  for (int b = 0; b < 4; ++b)
    for (int i = 0; i < ring.tiles; ++i)
      for (int c = 0; c < 32; ++c)
        bad += out[std::size_t((b * ring.tiles + i) * 32 + c)] != ring.want(b / 2, i, c);
  CHECK(bad > 0); // the stages were overwritten
  // CTAs run as far apart as their synchronisation allows: a consumer then reads its stage
  // after a peer refilled it, bytes of a phase it has not waited for.
  CHECK(contains(r, "before waiting for that phase"));
}

TEST_CASE("invalid cluster launches: grid not a multiple of the cluster, too many CTAs") {
  std::vector<std::uint32_t> out(64);
  std::vector<int> flags = {0};
  const std::string odd = try_launch("cluster_ids", cluster_config({3, 1, 1}, {2, 1, 1}, 32),
                                     {buf(out, "out"), buf(flags, "flags")});
  CHECK(contains(odd, "invalid launch: grid (3,1,1) is not a multiple of the cluster (2,1,1)"));
  const std::string big = try_launch("cluster_ids", cluster_config({16, 1, 1}, {16, 1, 1}, 32),
                                     {buf(out, "out"), buf(flags, "flags")});
  CHECK(contains(big, "invalid launch: cluster (16,1,1) has more than 8 blocks"));
  const std::string zero = try_launch("cluster_ids", cluster_config({4, 1, 1}, {2, 0, 1}, 32),
                                      {buf(out, "out"), buf(flags, "flags")});
  CHECK(contains(zero, "invalid launch: cluster (2,0,1): a zero dimension"));
}
