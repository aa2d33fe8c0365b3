// A Hopper variant compiled with NVRTC for sm_90a and held to what the family promises (the
// tests of test_hopper_wgrad.cpp and test_hopper_split.cpp): no ignored setmaxnreg, no
// serialised wgmmas, no stack or spills, at most the registers the model assumed; its SASS
// (where a cuobjdump is found: KILN_CUOBJDUMP or build/tools) HGMMA and TMA loads, no HMMA, no
// local memory.
#pragma once

#include "generator/compile/nvrtc.hpp"
#include "generator/compile/sass_census.hpp"
#include "generator/emit/instance.hpp"
#include "tests/kernels/harness.hpp"

#include <doctest/doctest.h>

#include <fstream>

namespace kiln::test {

inline void check_sm90a_compile(const Variant& v) {
  CAPTURE(v.name);
  const CompileOutput out = nvrtc_compile(instance_source(v, {}), v.name + ".cu", v.name, "sm_90a");
  INFO(out.log);
  REQUIRE(out.ok);
  CHECK(out.log.find("C7508") == std::string::npos); // setmaxnreg not ignored
  CHECK(out.log.find("C7514") == std::string::npos); // wgmmas not serialised
  CHECK(out.resources.found);
  CHECK(out.resources.stack_bytes == 0);
  CHECK(out.resources.spill_stores + out.resources.spill_loads == 0);
  CHECK(out.resources.registers <= v.registers_per_thread);
  const std::string cubin = temp_dir("kiln-sm90a-sass") + "/" + v.name + ".cubin";
  {
    std::ofstream f(cubin, std::ios::binary);
    f.write(out.image.data(), std::streamsize(out.image.size()));
  }
  const auto census = sass_census(cubin);
  if (!census) {
    MESSAGE("no cuobjdump (KILN_CUOBJDUMP or build/tools): census skipped for " << v.name);
    return;
  }
  MESSAGE(v.name << ": " << out.resources.registers << " registers, HGMMA " << census->hgmma
                 << ", UTMALDG " << census->tma_loads);
  CHECK(census->hgmma > 0);
  CHECK(census->hmma == 0);
  CHECK(census->tma_loads > 0);
  CHECK(census->local_loads + census->local_stores == 0);
}

} // namespace kiln::test
