// Each malformed .npy gets a kiln::Error naming the file, "header" and the problem.
#include "runtime/io/npy.hpp"

#include "tests/unit/io/helpers.hpp"

using namespace kiln;
using namespace kiln::io;
using kiln::test::bytes;

namespace {

const std::string data_dir = KILN_TEST_DATA "/npy/";

// A version 1.0 file with the given header dict and data_bytes of zeros.
std::vector<std::byte> npy(std::string dict, size_t data_bytes) {
  std::string s = "\x93NUMPY\x01";
  s += '\0';
  dict += '\n';
  s += char(dict.size() & 0xff);
  s += char(dict.size() >> 8);
  return bytes(s + dict + std::string(data_bytes, '\0'));
}

std::vector<std::byte> with_shape(const std::string& shape, size_t data_bytes = 0) {
  return npy("{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }", data_bytes);
}

#define CHECK_NPY_ERROR(data, part) CHECK_ERROR(parse_npy(data, "x.npy"), "x.npy", "header", part)

} // namespace

TEST_CASE("npy rejects bad magic") {
  CHECK_NPY_ERROR(bytes("PK\x03\x04 a zip file"), "not a .npy file (bad magic)");
  CHECK_NPY_ERROR(bytes(""), "too short");
  CHECK_NPY_ERROR(bytes("\x93NUM"), "too short");
}

TEST_CASE("npy rejects unknown format versions") {
  CHECK_NPY_ERROR(bytes(std::string("\x93NUMPY\x04\x00\x10\x00", 10)),
                  "unsupported .npy format version 4.0");
  CHECK_NPY_ERROR(bytes(std::string("\x93NUMPY\x01\x01\x10\x00", 10)), "version 1.1");
}

TEST_CASE("npy rejects a truncated header length") {
  CHECK_NPY_ERROR(bytes(std::string("\x93NUMPY\x01\x00\x10", 9)), "9 bytes, too short");
  CHECK_NPY_ERROR(bytes(std::string("\x93NUMPY\x02\x00\x10\x00\x00", 11)), "11 bytes, too short");
}

TEST_CASE("npy rejects a header length past the end of the file") {
  std::vector<std::byte> f = with_shape("(2, 3)", 24);
  f.resize(40); // cut inside the header
  CHECK_NPY_ERROR(f, "header length 60 runs past the end of the file (40 bytes)");
  CHECK_NPY_ERROR(bytes(std::string("\x93NUMPY\x03\x00\xff\xff\xff\xff{}", 14)),
                  "header length 4294967295 runs past the end");
}

TEST_CASE("npy rejects big-endian data") {
  CHECK_ERROR(read_npy(data_dir + "big_endian.npy"), data_dir + "big_endian.npy", "header",
              "big-endian dtype '>f4' is not supported");
}

TEST_CASE("npy rejects fortran order") {
  CHECK_ERROR(read_npy(data_dir + "fortran.npy"), data_dir + "fortran.npy", "header",
              "fortran_order arrays are not supported");
}

TEST_CASE("npy rejects other dtypes") {
  CHECK_ERROR(read_npy(data_dir + "u8.npy"), data_dir + "u8.npy", "header",
              "unsupported dtype '|u1'");
  CHECK_ERROR(read_npy(data_dir + "bool.npy"), data_dir + "bool.npy", "header",
              "unsupported dtype '|b1'");
  CHECK_ERROR(read_npy(data_dir + "structured.npy"), data_dir + "structured.npy", "header",
              "structured dtypes are not supported");
  CHECK_NPY_ERROR(npy("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", 8),
                  "unsupported dtype '|O'");
  CHECK_NPY_ERROR(npy("{'descr': '<f4 ', 'fortran_order': False, 'shape': (1,), }", 4),
                  "unsupported dtype '<f4 '");
  CHECK_NPY_ERROR(npy("{'descr': 4, 'fortran_order': False, 'shape': (1,), }", 4),
                  "expected a string but found '4'");
}

TEST_CASE("npy rejects a header that is not a dict") {
  CHECK_NPY_ERROR(npy("", 0), "expected '{' but found the end of the header");
  CHECK_NPY_ERROR(npy("['descr', '<f4']", 0), "expected '{' but found '['");
  CHECK_NPY_ERROR(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (), ", 4),
                  "expected a string but found the end of the header");
  CHECK_NPY_ERROR(npy("{'descr': '<f4', 'fortran_order': False, 'shape': ()} x", 4),
                  "unexpected 'x' after the dict");
  CHECK_NPY_ERROR(
      npy(std::string("{'descr': '<f4', 'fortran_order': False, 'shape': ()}") + '\0', 4),
      "unexpected byte 0x00 after the dict");
  CHECK_NPY_ERROR(npy("{'descr' '<f4'}", 0), "expected ':' but found '''");
  CHECK_NPY_ERROR(npy("{,}", 0), "expected a string but found ','");
  CHECK_NPY_ERROR(npy("{'descr: '<f4'}", 0), "expected ':' but found '<'");
  CHECK_NPY_ERROR(npy("{'descr", 0), "unsupported byte 0x0a in a string");
  CHECK_NPY_ERROR(npy("{'de\\x73cr': '<f4'}", 0), "unsupported '\\' in a string");
  CHECK_NPY_ERROR(npy("{'" + std::string(33, 'k') + "': 1}", 0),
                  "string longer than 32 characters");
}

TEST_CASE("npy rejects missing keys") {
  CHECK_NPY_ERROR(npy("{}", 0), "missing key 'descr'");
  CHECK_NPY_ERROR(npy("{'descr': '<f4', 'shape': (1,)}", 4), "missing key 'fortran_order'");
  CHECK_NPY_ERROR(npy("{'descr': '<f4', 'fortran_order': False}", 4), "missing key 'shape'");
}

TEST_CASE("npy rejects duplicate keys") {
  CHECK_NPY_ERROR(npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", 4),
                  "duplicate key 'descr'");
  CHECK_NPY_ERROR(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'shape': (1,)}", 4),
                  "duplicate key 'shape'");
}

TEST_CASE("npy rejects unknown keys") {
  CHECK_NPY_ERROR(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", 4),
                  "unknown key 'x'");
}

TEST_CASE("npy rejects fortran_order that is not a bool") {
  CHECK_NPY_ERROR(npy("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}", 4),
                  "expected True or False but found '0'");
  CHECK_NPY_ERROR(npy("{'descr': '<f4', 'fortran_order': Falsey, 'shape': (1,)}", 4),
                  "expected True or False");
}

TEST_CASE("npy rejects shapes that are not tuples of non-negative integers") {
  CHECK_NPY_ERROR(with_shape("(3)", 12), "shape is not a tuple (a 1-tuple needs a comma)");
  CHECK_NPY_ERROR(with_shape("[3]", 12), "expected '(' but found '['");
  CHECK_NPY_ERROR(with_shape("(,)"), "expected a dimension but found ','");
  CHECK_NPY_ERROR(with_shape("(2,,3)"), "expected a dimension but found ','");
  CHECK_NPY_ERROR(with_shape("(2 3)"), "expected ')' but found '3'");
  CHECK_NPY_ERROR(with_shape("(-1,)"), "negative dimension");
  CHECK_NPY_ERROR(with_shape("(2.5,)"), "unexpected '.' in a dimension");
  CHECK_NPY_ERROR(with_shape("(3L,)"), "unexpected 'L' in a dimension");
  CHECK_NPY_ERROR(with_shape("(03,)"), "leading zero");
  CHECK_NPY_ERROR(with_shape("('3',)"), "expected a dimension but found '''");
  CHECK_NPY_ERROR(with_shape("(2, 3"), "expected a dimension but found '}'");
}

TEST_CASE("npy rejects shapes with too many elements") {
  CHECK_NPY_ERROR(with_shape("(99999999999999999999,)"), "dimension is too large");
  CHECK_NPY_ERROR(with_shape("(1099511627776, 2)"),
                  "shape [1099511627776, 2] has more than 2^40 elements");
  CHECK_NPY_ERROR(with_shape("(4294967296, 4294967296)"), "more than 2^40 elements");
  // A zero makes the count 0, but the rest must still not overflow a running product.
  CHECK_NPY_ERROR(with_shape("(1099511627776, 1099511627776, 0)"), "more than 2^40 elements");
  CHECK(parse_npy(with_shape("(1099511627776, 0)"), "x.npy").numel() == 0);
}

TEST_CASE("npy rejects data shorter or longer than the shape says") {
  CHECK_NPY_ERROR(with_shape("(2, 3)", 20), "declares 24 bytes of data but the file has 20");
  CHECK_NPY_ERROR(with_shape("(2, 3)", 28), "declares 24 bytes of data but the file has 28");
  CHECK_NPY_ERROR(with_shape("(0,)", 1), "declares 0 bytes of data but the file has 1");
  CHECK_NPY_ERROR(with_shape("()", 0), "declares 4 bytes of data but the file has 0");
}
