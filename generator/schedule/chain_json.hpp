// kiln-chain/1: a chain problem handed in directly (DESIGN.md 4.3).
#pragma once

#include "schedules/chain.hpp"

#include <nlohmann/json.hpp>
#include <string>

namespace kiln {

sched::Chain load_chain(const std::string& path);
nlohmann::ordered_json chain_to_json(const sched::Chain& c);

} // namespace kiln
