// .npy round trips and byte-exact compatibility with numpy.save (reference files made by
// tests/data/npy/generate.py).
#include "runtime/io/file.hpp"
#include "runtime/io/npy.hpp"

#include "tests/unit/io/helpers.hpp"

#include <cstring>

using namespace kiln;
using namespace kiln::io;
using kiln::test::bytes;
using kiln::test::TempDir;

namespace {

const std::string data_dir = KILN_TEST_DATA "/npy/";

// A tensor whose elements are distinct, so a transposition or offset shows.
Tensor sample(DType dtype, Shape shape) {
  Tensor t(dtype, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set(i, double(i % 2 ? -i : i) * 0.5 + 1);
  return t;
}

bool same(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
         (a.nbytes() == 0 || std::memcmp(a.bytes(), b.bytes(), a.nbytes()) == 0);
}

} // namespace

TEST_CASE("npy round trips every dtype and shape") {
  for (DType dtype : {DType::f16, DType::f32, DType::f64, DType::i32, DType::i64}) {
    for (const Shape& shape :
         std::vector<Shape>{{}, {0}, {1}, {3}, {2, 3}, {2, 0, 3}, {1, 1, 1, 1, 5}}) {
      CAPTURE(dtype_name(dtype));
      CAPTURE(shape_str(shape));
      Tensor t = sample(dtype, shape);
      std::vector<std::byte> file = serialize_npy(t);
      // numpy's alignment: the data starts at a multiple of 64 after a newline.
      CHECK((file.size() - t.nbytes()) % 64 == 0);
      CHECK(char(file[file.size() - t.nbytes() - 1]) == '\n');
      CHECK(same(parse_npy(file, "t.npy"), t));
    }
  }
}

TEST_CASE("npy reads numpy.save output and writes the same bytes") {
  struct Ref {
    const char* file;
    DType dtype;
    Shape shape;
    std::vector<double> values;
  };
  const std::vector<Ref> refs = {
      {"f32_2x3", DType::f32, {2, 3}, {-1, -0.5, 0, 0.5, 1, 1.5}},
      {"f16_3", DType::f16, {3}, {1, -2.5, 65504}},
      {"f64_scalar", DType::f64, {}, {3.25}},
      {"i32_4", DType::i32, {4}, {1, -2, 3, 2147483647}},
      {"i64_2x1x3", DType::i64, {2, 1, 3}, {-3, -2, -1, 0, 1, 2}},
      {"i64_0x4", DType::i64, {0, 4}, {}},
  };
  for (const Ref& r : refs) {
    CAPTURE(r.file);
    const std::string path = data_dir + r.file + ".npy";
    Tensor t = read_npy(path);
    CHECK(t.dtype() == r.dtype);
    CHECK(t.shape() == r.shape);
    REQUIRE(t.numel() == int64_t(r.values.size()));
    for (size_t i = 0; i < r.values.size(); ++i)
      CHECK(t.get(int64_t(i)) == r.values[i]);
    CHECK(serialize_npy(t) == read_file(path));
  }
}

TEST_CASE("npy reads format versions 2.0 and 3.0") {
  const Tensor v1 = read_npy(data_dir + "f32_2x3.npy");
  CHECK(same(read_npy(data_dir + "v2_f32_2x3.npy"), v1));
  CHECK(same(read_npy(data_dir + "v3_f32_2x3.npy"), v1));
}

TEST_CASE("npy writes version 2.0 when the header outgrows 1.0") {
  Tensor t(DType::f32, Shape(25000, 1)); // "1, " per dimension: a 75 KB header
  std::vector<std::byte> file = serialize_npy(t);
  CHECK(int(file[6]) == 2);
  CHECK((file.size() - t.nbytes()) % 64 == 0);
  CHECK(same(parse_npy(file, "big.npy"), t));
  Tensor small(DType::f32, Shape(100, 1));
  CHECK(int(serialize_npy(small)[6]) == 1);
}

TEST_CASE("npy accepts header spellings numpy accepts") {
  auto file = [](std::string dict, size_t data_bytes) {
    std::string s = "\x93NUMPY\x01";
    s += '\0';
    dict += '\n';
    s += char(dict.size() & 0xff);
    s += char(dict.size() >> 8);
    return bytes(s + dict + std::string(data_bytes, '\0'));
  };
  // Key order, double quotes, no trailing comma, odd whitespace, 16-byte alignment of old numpy.
  CHECK(parse_npy(file("{\"shape\":(2,3),\"fortran_order\":False,\"descr\":\"<f4\"}", 24), "a")
            .shape() == Shape{2, 3});
  CHECK(parse_npy(file("{ 'descr' : '<f4' ,\n 'fortran_order' : False , 'shape' : ( 3 , ) , }", 12),
                  "a")
            .shape() == Shape{3});
  CHECK(parse_npy(file("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3,), }   ", 48), "a")
            .shape() == Shape{2, 3});
  // Native and not-applicable byte orders mean little-endian here.
  CHECK(
      parse_npy(file("{'descr': '=i4', 'fortran_order': False, 'shape': (1,)}", 4), "a").dtype() ==
      DType::i32);
  CHECK(
      parse_npy(file("{'descr': '|i8', 'fortran_order': False, 'shape': (1,)}", 8), "a").dtype() ==
      DType::i64);
}

TEST_CASE("write_npy writes a file read_npy reads back") {
  TempDir dir;
  Tensor t = sample(DType::f16, {4, 5});
  write_npy(dir / "t.npy", t);
  CHECK(same(read_npy(dir / "t.npy"), t));
  CHECK(dir.list() == std::vector<std::string>{"t.npy"});
}

TEST_CASE("a failing write_npy leaves no file behind") {
  TempDir dir;
  std::filesystem::create_directories(dir / "out.npy/keep"); // rename cannot replace it
  CHECK_ERROR(write_npy(dir / "out.npy", sample(DType::f32, {8})), dir / "out.npy", "",
              "cannot replace");
  CHECK(dir.list() == std::vector<std::string>{"out.npy"});
  CHECK(std::filesystem::is_directory(dir / "out.npy/keep"));
}

TEST_CASE("npy refuses to save bf16 and creates no file") {
  TempDir dir;
  CHECK_ERROR(serialize_npy(Tensor(DType::bf16, {2})), "", "", "cannot save bf16");
  CHECK_ERROR(write_npy(dir / "b.npy", Tensor(DType::bf16, {2})), dir / "b.npy", "",
              "cannot save bf16");
  CHECK(dir.list().empty());
}
