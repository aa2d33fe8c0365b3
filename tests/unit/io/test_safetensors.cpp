// safetensors round trips and the reference implementation's layout.
#include "runtime/io/file.hpp"
#include "runtime/io/safetensors.hpp"

#include "tests/unit/io/st_helpers.hpp"

#include <cstring>

using namespace kiln;
using namespace kiln::io;
using kiln::test::safetensors_image;
using kiln::test::TempDir;

namespace {

Tensor sample(DType dtype, Shape shape, double offset) {
  Tensor t(dtype, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set(i, double(i % 2 ? -i : i) * 0.5 + offset);
  return t;
}

bool same(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
         (a.nbytes() == 0 || std::memcmp(a.bytes(), b.bytes(), a.nbytes()) == 0);
}

bool same(const Safetensors& a, const Safetensors& b) {
  if (a.metadata != b.metadata || a.tensors.size() != b.tensors.size()) return false;
  for (const auto& [name, t] : a.tensors) {
    auto it = b.tensors.find(name);
    if (it == b.tensors.end() || !same(t, it->second)) return false;
  }
  return true;
}

std::string f32_bytes(std::initializer_list<float> v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), std::data(v), s.size());
  return s;
}

} // namespace

TEST_CASE("safetensors round trips every dtype and shape") {
  Safetensors st;
  const std::vector<Shape> shapes = {{}, {0}, {3}, {2, 3}, {2, 0, 3}, {1, 2, 1, 2}};
  for (DType dtype : {DType::f16, DType::bf16, DType::f32, DType::f64, DType::i32, DType::i64})
    for (size_t i = 0; i < shapes.size(); ++i)
      st.tensors.emplace(kiln::cat(dtype_name(dtype), ".", i), sample(dtype, shapes[i], double(i)));
  st.metadata = {{"format", "pt"}, {"note", "ünïcode \"quoted\"\n"}};
  std::vector<std::byte> file = serialize_safetensors(st);
  CHECK(same(parse_safetensors(file, "w.safetensors"), st));
  CHECK(serialize_safetensors(parse_safetensors(file, "w.safetensors")) == file);
}

TEST_CASE("safetensors round trips an empty file") {
  std::vector<std::byte> file = serialize_safetensors({});
  CHECK(kiln::test::text(file) == std::string("\x08\0\0\0\0\0\0\0{}      ", 16));
  CHECK(parse_safetensors(file, "e").tensors.empty());
}

TEST_CASE("safetensors writes the reference layout") {
  // As safetensors' save_file writes {"a": [1, 2] f32}, {"b": [[3]] f32}: compact JSON,
  // dtype/shape/data_offsets, metadata first, spaces to a multiple of 8.
  Safetensors st;
  Tensor a(DType::f32, {2}), b(DType::f32, {1, 1});
  a.set(0, 1);
  a.set(1, 2);
  b.set(0, 3);
  st.tensors = {{"a", a}, {"b", b}};
  std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                       R"("b":{"dtype":"F32","shape":[1,1],"data_offsets":[8,12]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  CHECK(serialize_safetensors(st) == safetensors_image(header, f32_bytes({1, 2, 3})));

  st.metadata = {{"format", "pt"}};
  header =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"F32","shape":[1,1],"data_offsets":[8,12]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  CHECK(header.size() % 8 == 0);
  CHECK(serialize_safetensors(st) == safetensors_image(header, f32_bytes({1, 2, 3})));
}

TEST_CASE("safetensors reads other writers' layouts") {
  // Data in another order than the names, keys in another order, whitespace, no padding.
  const std::string header = R"( { "b" : {"data_offsets": [0, 4], "shape": [], "dtype": "I32"},
    "a": {"shape": [2], "dtype": "F16", "data_offsets": [4, 8]},
    "__metadata__": {"k": "v"} } )";
  std::string data("\x07\0\0\0\x00\x3c\x00\xc0", 8); // i32 7; f16 1.0, -2.0
  Safetensors st = parse_safetensors(safetensors_image(header, data), "o");
  REQUIRE(st.tensors.size() == 2);
  CHECK(st.tensors.at("b").dtype() == DType::i32);
  CHECK(st.tensors.at("b").shape().empty());
  CHECK(st.tensors.at("b").get(0) == 7);
  CHECK(st.tensors.at("a").get(0) == 1.0);
  CHECK(st.tensors.at("a").get(1) == -2.0);
  CHECK(st.metadata == std::map<std::string, std::string>{{"k", "v"}});
}

TEST_CASE("safetensors accepts empty tensors at any boundary") {
  const std::string header = R"({"e":{"dtype":"F32","shape":[0,3],"data_offsets":[4,4]},)"
                             R"("x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                             R"("z":{"dtype":"F64","shape":[0],"data_offsets":[0,0]}})";
  Safetensors st = parse_safetensors(safetensors_image(header, f32_bytes({5})), "z");
  CHECK(st.tensors.at("e").shape() == Shape{0, 3});
  CHECK(st.tensors.at("x").get(0) == 5);
}

TEST_CASE("write_safetensors writes atomically and reads back") {
  TempDir dir;
  Safetensors st;
  st.tensors.emplace("w", sample(DType::bf16, {3, 2}, 1));
  write_safetensors(dir / "m.safetensors", st);
  CHECK(same(read_safetensors(dir / "m.safetensors"), st));
  CHECK(read_file(dir / "m.safetensors") == serialize_safetensors(st));
  CHECK(dir.list() == std::vector<std::string>{"m.safetensors"});

  std::filesystem::create_directories(dir / "d.safetensors/keep");
  CHECK_ERROR(write_safetensors(dir / "d.safetensors", st), dir / "d.safetensors", "",
              "cannot replace");
  CHECK(dir.list() == std::vector<std::string>{"d.safetensors", "m.safetensors"});
}

TEST_CASE("safetensors refuses to write what it could not read back") {
  TempDir dir;
  Safetensors st;
  st.tensors.emplace("__metadata__", Tensor(DType::f32, {1}));
  CHECK_ERROR(serialize_safetensors(st), "", "__metadata__", "reserved for metadata");
  CHECK_ERROR(write_safetensors(dir / "x", st), dir / "x", "__metadata__", "reserved for metadata");
  Safetensors bad;
  bad.tensors.emplace("\xff", Tensor(DType::f32, {1}));
  CHECK_ERROR(serialize_safetensors(bad), "", "header", "not valid utf-8");
  CHECK(dir.list().empty());
}
