// The .npy header: a Python dict literal such as
// `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`.
#pragma once

#include "runtime/shape.hpp"

#include <string>
#include <string_view>

namespace kiln::io {

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

// Parses the dict strictly: the keys 'descr' (a string), 'fortran_order' (True or False) and
// 'shape' (a tuple of non-negative integers) each exactly once, in any order, with the
// whitespace and trailing commas Python allows. Throws kiln::Error(name, "header", ...).
NpyHeader parse_npy_header(std::string_view text, const std::string& name);

// The dict as numpy.save writes it, including the spare spaces it leaves after the dict
// so the first dimension can grow in place (but not the final padding and newline).
std::string format_npy_header(const NpyHeader& h);

} // namespace kiln::io
