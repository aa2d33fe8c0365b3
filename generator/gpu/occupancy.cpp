#include "generator/gpu/occupancy.hpp"

#include <algorithm>

namespace kiln {

Occupancy occupancy(const GpuDesc& g, int64_t threads, int regs, int64_t smem) {
  Occupancy o;
  if (threads <= 0 || threads > g.max_threads_per_block) {
    o.limiter = "threads";
    return o;
  }
  const int64_t warps = (threads + g.warp_size - 1) / g.warp_size;
  const int64_t max_warps = g.max_threads_per_sm / g.warp_size;
  int64_t by_threads = max_warps / warps;
  // Registers are allocated per warp in units of 256.
  const int64_t regs_per_warp = (int64_t(std::max(regs, 1)) * g.warp_size + 255) / 256 * 256;
  int64_t by_regs = regs_per_warp * warps > g.registers_per_block ? 0 : g.registers_per_sm / (regs_per_warp * warps);
  const int64_t smem_limit = std::max(g.shared_memory_per_block_optin, g.shared_memory_per_block);
  const int64_t smem_per_block = smem + g.shared_memory_reserved_per_block;
  int64_t by_smem = smem > smem_limit ? 0
                    : smem_per_block == 0 ? g.max_blocks_per_sm // no shared memory: no limit
                                          : g.shared_memory_per_sm / smem_per_block;
  int64_t blocks = std::min({by_threads, by_regs, by_smem, g.max_blocks_per_sm});
  o.limiter = blocks == by_smem ? "shared memory" : blocks == by_regs ? "registers"
              : blocks == by_threads ? "threads" : "blocks";
  o.blocks_per_sm = int(std::max<int64_t>(blocks, 0));
  o.warps_fraction = double(o.blocks_per_sm * warps) / double(max_warps);
  return o;
}

} // namespace kiln
