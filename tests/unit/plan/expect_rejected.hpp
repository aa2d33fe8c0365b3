// A plan that lies must fail parse_plan with a message naming the lie: the plan validation
// tests' one check.
#pragma once

#include "runtime/error.hpp"
#include "runtime/plan.hpp"

#include <doctest/doctest.h>
#include <string>

inline void expect_rejected(const kiln::Plan& p, const char* what) {
  const std::string text = kiln::plan_to_json(p).dump();
  try {
    kiln::parse_plan(text, "plan.json");
    FAIL("accepted: " << std::string(what));
  } catch (const kiln::Error& e) {
    INFO(std::string(e.what()) << " should say: " << std::string(what));
    CHECK(std::string(e.what()).find(what) != std::string::npos);
  }
}
