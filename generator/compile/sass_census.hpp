// A census of a cubin's machine code (SASS, disassembled by cuobjdump): which tensor-core
// instructions a kernel issues and how many (HMMA: Ampere-style mma.sync; HGMMA: Hopper's
// wgmma), whether it loads through TMA (UTMALDG), and whether it touches local memory
// (LDL/STL: spills or stack arrays). `kiln compile` records it per kernel in the manifest
// when a disassembler is present (`kiln compile` only, not the compiles inside run or bench);
// `make test` fetches one from PyPI into build/tools
// (nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm) for the census test, since the Debian
// toolkit lacks it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kiln {

struct SassCensus {
  int instructions = 0;
  int hmma = 0, hgmma = 0; // tensor-core instructions in the code (static count)
  int tma_loads = 0;       // UTMALDG
  int tma_multicasts = 0;  // of those, UTMALDG.*.MULTICAST (a cluster's shared tiles)
  int local_loads = 0, local_stores = 0;
  // MEMBAR.ALL.GPU (static count): each waits for every memory access of its thread in flight,
  // the stores of an epilogue before it too. A Hopper conv has one per cluster barrier; one
  // in its main loop (a release at cluster scope) cost clustered resnet50 half its speed.
  int gpu_fences = 0;
  // "HGMMA", "HMMA" or "" (no tensor-core instruction): the family's kind of MMA.
  std::string mma() const { return hgmma ? "HGMMA" : hmma ? "HMMA" : ""; }
};

// Counts a `cuobjdump -sass` listing's instructions by opcode.
SassCensus parse_sass(std::string_view listing);

// The disassembler kiln uses: $KILN_CUOBJDUMP, else cuobjdump in $CUDA_HOME/bin or on
// PATH, provided that it runs (it needs nvdisasm beside it or on PATH); "" when there is
// none. Not searched for in the build: disassembling costs ~0.4 s of CPU per kernel, so
// the test suite turns it on only where it checks the census.
const std::string& cuobjdump_path();

// The census of a cubin, or nothing when no disassembler is present. Throws kiln::Error
// when the disassembler fails on the file.
std::optional<SassCensus> sass_census(const std::string& cubin);

} // namespace kiln
