#include "runtime/io/npy.hpp"

#include "runtime/error.hpp"
#include "runtime/io/endian.hpp"
#include "runtime/io/file.hpp"
#include "runtime/io/limits.hpp"
#include "runtime/io/npy_header.hpp"

#include <array>
#include <cstring>
#include <optional>
#include <string_view>

namespace kiln::io {
namespace {

constexpr std::string_view magic = "\x93NUMPY";
constexpr size_t align = 64; // numpy's ARRAY_ALIGN

struct Descr {
  std::string_view code; // without the byte-order character
  DType dtype;
};
constexpr std::array<Descr, 5> descrs{{{"f2", DType::f16},
                                       {"f4", DType::f32},
                                       {"f8", DType::f64},
                                       {"i4", DType::i32},
                                       {"i8", DType::i64}}};

// '<' is what numpy writes on little-endian hosts; '=' (native) and '|' (not applicable)
// mean the same there.
DType parse_descr(const std::string& descr, const std::string& name) {
  std::string_view code = descr.size() == 3 ? std::string_view(descr).substr(1) : "";
  for (const Descr& d : descrs) {
    if (d.code != code) continue;
    if (descr[0] == '>')
      throw Error(name, "header", cat("big-endian dtype '", descr, "' is not supported"));
    if (descr[0] == '<' || descr[0] == '=' || descr[0] == '|') return d.dtype;
  }
  throw Error(name, "header",
              cat("unsupported dtype '", descr, "' (want <f2, <f4, <f8, <i4 or <i8)"));
}

std::string header_bytes(const Tensor& t) {
  std::optional<std::string_view> code;
  for (const Descr& d : descrs)
    if (d.dtype == t.dtype()) code = d.code;
  if (!code)
    throw Error(cat("cannot save ", dtype_name(t.dtype()), " as .npy (numpy has no such dtype)"));

  std::string dict = format_npy_header({cat("<", *code), false, t.shape()});
  // numpy's _wrap_header: pad with spaces and a newline so the data starts at a multiple of
  // 64; the padding is never empty (a full 64 when already aligned), as numpy does.
  const size_t text = dict.size() + 1;
  for (int version : {1, 2}) {
    const size_t prefix = magic.size() + 2 + (version == 1 ? 2 : 4);
    const size_t pad = align - (prefix + text) % align;
    const size_t len = text + pad;
    if (version == 1 && len > 0xffff) continue;
    std::string out(magic);
    out += char(version);
    out += char(0);
    for (size_t i = 0; i < prefix - magic.size() - 2; ++i)
      out += char((len >> (8 * i)) & 0xff);
    out += dict;
    out.append(pad, ' ');
    out += '\n';
    return out;
  }
  throw Error("npy header does not fit version 2.0"); // unreachable: 4 GiB of header
}

} // namespace

Tensor parse_npy(std::span<const std::byte> data, const std::string& name) {
  const size_t size = data.size();
  const auto* chars = reinterpret_cast<const char*>(data.data());
  if (std::string_view(chars, std::min(size, magic.size())) !=
      magic.substr(0, std::min(size, magic.size())))
    throw Error(name, "header", "not a .npy file (bad magic)");
  if (size < magic.size() + 2)
    throw Error(name, "header", cat("file is ", size, " bytes, too short for a .npy header"));
  const int major = int(data[6]), minor = int(data[7]);
  if ((major < 1 || major > 3) || minor != 0)
    throw Error(name, "header", cat("unsupported .npy format version ", major, ".", minor));

  const size_t len_size = major == 1 ? 2 : 4;
  const size_t prefix = magic.size() + 2 + len_size;
  if (size < prefix)
    throw Error(name, "header", cat("file is ", size, " bytes, too short for a .npy header"));
  const uint64_t header_len =
      len_size == 2 ? load_le<uint16_t>(&data[8]) : load_le<uint32_t>(&data[8]);
  if (header_len > size - prefix)
    throw Error(
        name, "header",
        cat("header length ", header_len, " runs past the end of the file (", size, " bytes)"));

  NpyHeader h = parse_npy_header(std::string_view(chars + prefix, header_len), name);
  if (h.fortran_order) throw Error(name, "header", "fortran_order arrays are not supported");
  const DType dtype = parse_descr(h.descr, name);
  const std::optional<int64_t> n = bounded_numel(h.shape);
  if (!n)
    throw Error(name, "header", cat("shape ", shape_str(h.shape), " has more than 2^40 elements"));

  const size_t start = prefix + header_len;
  const uint64_t want = uint64_t(*n) * dtype_size(dtype);
  if (want != size - start)
    throw Error(name, "header",
                cat("declares ", want, " bytes of data but the file has ", size - start));
  Tensor t(dtype, std::move(h.shape));
  if (want) std::memcpy(t.bytes(), chars + start, want);
  return t;
}

Tensor read_npy(const std::string& path) { return parse_npy(read_file(path), path); }

std::vector<std::byte> serialize_npy(const Tensor& t) {
  const std::string header = header_bytes(t);
  std::vector<std::byte> out(header.size() + t.nbytes());
  std::memcpy(out.data(), header.data(), header.size());
  if (t.nbytes()) std::memcpy(out.data() + header.size(), t.bytes(), t.nbytes());
  return out;
}

void write_npy(const std::string& path, const Tensor& t) {
  std::string header;
  try {
    header = header_bytes(t);
  } catch (const Error& e) {
    throw e.in_file(path);
  }
  // Header and data written separately: no second copy of a large tensor.
  AtomicFile f(path);
  f.write(header);
  f.write({t.bytes(), t.nbytes()});
  f.commit();
}

} // namespace kiln::io
