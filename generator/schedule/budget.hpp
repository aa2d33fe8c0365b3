// Memory budgets as users write them: "123456" (bytes), "700MiB", "12GiB", "1.5GB", or a
// fraction of the store-all peak: "40%".
#pragma once

#include <cstdint>
#include <string>

namespace kiln {

// `reference` is what 100% means; throws kiln::Error on anything unparseable.
int64_t parse_budget(const std::string& text, int64_t reference);

} // namespace kiln
