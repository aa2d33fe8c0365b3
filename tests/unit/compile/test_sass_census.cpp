// The SASS census's parser on a listing in cuobjdump's format (predicates, uniform
// predicates, opcode suffixes, comments and labels that are not instructions).
#include "generator/compile/sass_census.hpp"

#include <doctest/doctest.h>

using namespace kiln;

TEST_CASE("the SASS census counts instructions by opcode") {
  const char* listing = R"sass(
	code for sm_90
		Function : k
	.headerflags	@"EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                    /* 0x00000a00ff017b82 */
        /*0010*/              @!P0 HMMA.16816.F32 R4, R8, R12, R4 ;          /* 0x000000000c04723c */
        /*0020*/               @P1 HMMA.16816.F32 R16, R8, R14, R16 ;
        /*0030*/                   HGMMA.64x128x16.F32 R24, gdesc[UR4], R24 ;
        /*0040*/              @UP0 UTMALDG.2D [UR8], [UR10] ;
        /*0048*/                   UTMALDG.2D.MULTICAST [UR8], [UR10], UR12 ;
        /*0050*/                   STL.64 [R1], R4 ;
        /*0060*/                   LDL R6, [R1+0x8] ;
        /*0070*/              @!PT LDS RZ, [RZ] ;
        /*0074*/               @P0 MEMBAR.ALL.GPU ;
        /*0078*/                   MEMBAR.ALL.CTA ;
.L_x_1:
        /*0080*/                   EXIT ;
)sass";
  const SassCensus c = parse_sass(listing);
  CHECK(c.instructions == 12);
  CHECK(c.hmma == 2);
  CHECK(c.hgmma == 1);
  CHECK(c.mma() == "HGMMA");
  CHECK(c.tma_loads == 2);
  CHECK(c.tma_multicasts == 1);
  CHECK(c.local_loads == 1);
  CHECK(c.local_stores == 1);
  CHECK(c.gpu_fences == 1); // MEMBAR.ALL.CTA is no GPU-scope fence
  CHECK(parse_sass("        /*0000*/  HMMA.1688.F32.TF32 R0, R2, R4, R0 ;").mma() == "HMMA");
  CHECK(parse_sass("        /*0000*/  FFMA R0, R2, R4, R0 ;").mma().empty());
}
