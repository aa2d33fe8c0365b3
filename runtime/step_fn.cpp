// The function lookups of step_fn.hpp over the registry (runtime/ops/): each function's
// signature is in its file there.
#include "runtime/step_fn.hpp"

#include "runtime/ops/registry.hpp"

namespace kiln {

namespace {

bool listed(std::span<const std::string_view> roles, std::string_view role) {
  for (std::string_view r : roles)
    if (r == role) return true;
  return false;
}

} // namespace

std::string_view fn_name(Fn f) { return fn_def(f).name; }

std::optional<Fn> parse_fn(std::string_view name) {
  for (size_t i = 0; i < kFnCount; ++i)
    if (fn_def(Fn(i)).name == name) return Fn(i);
  return std::nullopt;
}

FnSignature fn_signature(Fn f) { return fn_def(f).signature; }

bool fn_reads(Fn f, std::string_view role) { return listed(fn_def(f).signature.reads, role); }
bool fn_writes(Fn f, std::string_view role) { return listed(fn_def(f).signature.writes, role); }
bool fn_updates(Fn f, std::string_view role) { return listed(fn_def(f).signature.updates, role); }

} // namespace kiln
