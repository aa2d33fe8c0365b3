// A kernel variant: one instance of a template family, with every compile-time parameter
// fixed, its launch geometry, and the estimates selection compares.
#pragma once

#include "generator/cost/kernel_cost.hpp"
#include "runtime/plan.hpp"

#include <array>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace kiln {

// A type parameter, spelled as C++: `using T = kiln::f16;`.
struct CfgType {
  std::string name;
  bool operator==(const CfgType&) const = default;
};
// A constant of an enum type: `static constexpr kiln::Act ACT = kiln::Act::relu;`.
struct CfgEnum {
  std::string type, value; // "kiln::Act", "relu"
  bool operator==(const CfgEnum&) const = default;
};
// One compile-time constant of an instance's configuration: an integer, a boolean, a float
// (kept as the double of the 9 significant digits the instance writes, which name any
// float), a type or an enumerator.
using CfgValue = std::variant<int64_t, bool, double, CfgType, CfgEnum>;
struct CfgEntry {
  std::string name;
  CfgValue value;
  bool operator==(const CfgEntry&) const = default;
};

struct Variant {
  std::string family;   // "conv2d_direct"
  std::string header;   // the template, relative to templates/: "conv/direct.cuh"
  std::string function; // the template's entry: "kiln::conv::direct"
  std::string name;     // the instance name: configuration only, never "fast"
  // Constants of the instance's configuration struct, in order: ("N", 8),
  // ("T", CfgType{"kiln::f16"}), ...
  std::vector<CfgEntry> cfg;
  std::vector<std::string> args; // step argument roles in kernel parameter order
  std::array<int64_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  // Thread-block cluster dimensions (Kernel::cluster; {1, 1, 1}: none).
  std::array<int64_t, 3> cluster{1, 1, 1};
  // A persistent grid's units of work (its output tiles, which its blocks take in turn): what
  // the cost model counts waves of. 0: one per block.
  int64_t work_blocks = 0;
  int64_t dynamic_smem = 0;
  int64_t static_smem = 0;       // shared memory the template declares statically (estimate)
  int registers_per_thread = 32; // estimate before compiling
  bool promises_no_spills = true;
  // The kernel's __launch_bounds__ minimum of resident blocks per SM: selection sets it to
  // the occupancy the cost model priced a main-loop variant at, so ptxas cannot allocate
  // registers that would run it at fewer blocks (1: no promise, ptxas takes what it needs).
  int min_blocks_per_sm = 1;
  // Roofline inputs and the fraction of it this family reaches when occupancy is good.
  double flops = 0, bytes = 0, efficiency = 0.5;
  Math math = Math::fp32; // which peak applies
  // A tensor-core family's main loop per MMA (cost/main_loop.hpp): the shared-memory,
  // issue and latency ceilings the cost model prices it by. Empty for the other families.
  MainLoop loop;
  // A streaming kernel's loads in flight per thread (KernelWork::stream_bytes_in_flight).
  double stream_bytes_in_flight = 0;
  std::string note;       // why these parameters
  // Layout each 4-D argument must have (roles absent here accept either: none of ours).
  std::vector<std::pair<std::string, Layout>> layouts;
  // Roles whose buffer may be a pitched view (Buffer::view_pitch, channel_views.cpp): the
  // instance addresses it through the pitch its configuration names. A step with such an
  // argument is offered only variants that list its role (step_candidates).
  std::vector<std::string> pitched;
  // Why the cost model's price of this variant is not trusted (empty: it is): such a variant
  // is chosen only by a measurement (a tuning database's winner), or where no other variant is
  // valid; sweeps (--variants all, kiln bench, kiln tune) still offer it.
  std::string measured_only;

  int64_t threads() const { return block[0] * block[1] * block[2]; }
  int64_t blocks() const { return grid[0] * grid[1] * grid[2]; }
  // What the cost model prices (cost/kernel_cost.hpp).
  KernelWork work() const {
    return {flops,
            bytes,
            math,
            efficiency,
            threads(),
            work_blocks > 0 ? work_blocks : blocks(),
            registers_per_thread,
            static_smem + dynamic_smem,
            loop,
            stream_bytes_in_flight};
  }
};

// Appends a cfg constant: integers, booleans, type names, floats and enumerators.
void cfg_int(Variant& v, const std::string& name, int64_t value);
void cfg_bool(Variant& v, const std::string& name, bool value);
void cfg_type(Variant& v, const std::string& name, const std::string& type);
void cfg_float(Variant& v, const std::string& name, double value);
void cfg_enum(Variant& v, const std::string& name, const std::string& type,
              const std::string& value);
// The constant `name` of v's configuration, or null.
CfgValue* find_cfg(Variant& v, std::string_view name);
const CfgValue* find_cfg(const Variant& v, std::string_view name);
// Its integer constant `name` (an error where it has none), or `absent`; its boolean (false
// where absent): what a family reads back of an instance (its tensor maps, say).
int64_t cfg_int_of(const Variant& v, std::string_view name);
int64_t cfg_int_or(const Variant& v, std::string_view name, int64_t absent);
bool cfg_bool_of(const Variant& v, std::string_view name);

// The kernel a plan launches for the variant: its entry, image, launch geometry and
// argument roles.
Kernel kernel_of(const Variant& v);

// A number as it may appear in an instance name: 0.01 -> "0p01", 1e-05 -> "1em05".
std::string name_number(double value);
// Role x or y of a step read or written through a pitched view (Buffer::view_pitch): the
// constant X_PITCH / Y_PITCH and the role in Variant::pitched; nothing where pitch is 0.
void cfg_pitch(Variant& v, const std::string& role, int64_t pitch);
// Its part of an instance name: "_xp<pitch>" / "_yp<pitch>", "" where pitch is 0.
std::string pitch_tag(const std::string& role, int64_t pitch);
// "" for symmetric padding, else "_pe<h>x<w>" (the padding after the input): tiles of a
// tiled segment pad only at the image's true border, so their instances differ.
std::string padding_end_tag(const Attrs& a);

// The short dtype tag of instance names: f32, f16, bf16.
std::string dtype_tag(DType t);

// The C++ element type of a dtype: float, kiln::f16, kiln::bf16.
std::string cpp_type(DType t);

} // namespace kiln
