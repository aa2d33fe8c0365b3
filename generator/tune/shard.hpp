// Sharded sweeps (kiln tune --shard I/N): the work items — (layer shape, variant) pairs —
// sorted by (shape key, variant name), and item j goes to shard j mod N. Every machine
// computes the same sorted list from the same model and GPU descriptor, so the N shards
// partition the work exactly without talking to each other; dealing round-robin rather
// than in blocks spreads each shape's variants, and so the work, evenly.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace kiln {

struct Shard {
  int index = 0, count = 1;
  bool holds(size_t item) const { return item % size_t(count) == size_t(index); }
};

// "I/N" with 0 <= I < N; throws kiln::Error otherwise.
Shard parse_shard(const std::string& text);

// The positions in [0, n) that `s` holds, in order.
std::vector<size_t> shard_items(size_t n, const Shard& s);

} // namespace kiln
