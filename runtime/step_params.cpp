#include "runtime/step_params.hpp"

#include <array>
#include <utility>

namespace kiln {

namespace {

constexpr std::string_view names[] = {"none",       "fold_bn",    "sgd",
                                      "adam",       "region",     "channel_slice",
                                      "fused_pool", "tensor_map", "flip_taps"};
static_assert(std::size(names) == std::variant_size_v<FnParams>, "a name per alternative");

template <size_t... I> FnParams default_of(size_t index, std::index_sequence<I...>) {
  constexpr std::array<FnParams (*)(), sizeof...(I)> make = {
      +[]() -> FnParams { return std::variant_alternative_t<I, FnParams>{}; }...};
  return make[index]();
}

} // namespace

std::string_view guard_name(Guard g) {
  return g == Guard::dense ? "dense" : g == Guard::sparse ? "sparse" : "none";
}

std::string_view params_name(size_t index) { return index < std::size(names) ? names[index] : "?"; }

FnParams default_params(size_t index) {
  return default_of(index, std::make_index_sequence<std::variant_size_v<FnParams>>());
}

} // namespace kiln
