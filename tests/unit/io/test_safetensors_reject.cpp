// Each malformed safetensors file gets a kiln::Error naming the file and the tensor (or
// "header") and the problem.
#include "runtime/io/safetensors.hpp"

#include "tests/unit/io/st_helpers.hpp"

using namespace kiln;
using namespace kiln::io;
using kiln::test::bytes;
using kiln::test::safetensors_image;

namespace {

// A header with one tensor "t" whose entry is `entry`, and `data` bytes of data.
std::vector<std::byte> one(const std::string& entry, size_t data) {
  return safetensors_image(R"({"t":)" + entry + "}", std::string(data, '\0'));
}

} // namespace

#define CHECK_ST_ERROR(data, where, part)                                                          \
  CHECK_ERROR(parse_safetensors(data, "m.st"), "m.st", where, part)

TEST_CASE("safetensors rejects a file too short for the header length") {
  CHECK_ST_ERROR(bytes(std::string("\x02\0\0\0", 4)), "header",
                 "file is 4 bytes, too short for a safetensors header");
}

TEST_CASE("safetensors rejects an absurd header length") {
  CHECK_ST_ERROR(bytes(std::string("\0\0\0\0\0\0\0\x80{}", 10)), "header",
                 "header length 9223372036854775808 is larger than 100 MB");
  CHECK_ST_ERROR(bytes(std::string("\x01\xe1\xf5\x05\0\0\0\0{}", 10)), "header",
                 "larger than 100 MB");
}

TEST_CASE("safetensors rejects a header length past the end of the file") {
  CHECK_ST_ERROR(bytes(std::string("\x10\0\0\0\0\0\0\0{}", 10)), "header",
                 "header length 16 runs past the end of the file (10 bytes)");
}

TEST_CASE("safetensors rejects a header that is not json") {
  CHECK_ST_ERROR(safetensors_image("{\"t\": }"), "header",
                 "header is not valid json (error at byte 7)");
  CHECK_ST_ERROR(safetensors_image(""), "header", "header is not valid json");
  CHECK_ST_ERROR(safetensors_image("{} {}"), "header", "header is not valid json");
  CHECK_ST_ERROR(safetensors_image("{\"t\": 1e999}"), "header", "header is not valid json");
  CHECK_ST_ERROR(safetensors_image("{\"\xff\": 1}"), "header", "header is not valid json");
}

TEST_CASE("safetensors rejects a header that is not an object") {
  CHECK_ST_ERROR(safetensors_image("[]"), "header", "header is not a json object");
  CHECK_ST_ERROR(safetensors_image("\"x\""), "header", "header is not a json object");
}

TEST_CASE("safetensors rejects entries that are not tensor objects") {
  CHECK_ST_ERROR(one("[]", 0), "t", "entry is not an object");
  CHECK_ST_ERROR(one(R"({"dtype":"F32","shape":[]})", 4), "t", "missing \"data_offsets\"");
  CHECK_ST_ERROR(one(R"({"shape":[],"data_offsets":[0,4]})", 4), "t", "missing \"dtype\"");
  CHECK_ST_ERROR(one(R"({"dtype":"F32","shape":[],"data_offsets":[0,4],"extra":1})", 4), "t",
                 "unknown key \"extra\"");
}

TEST_CASE("safetensors rejects unknown dtypes") {
  CHECK_ST_ERROR(one(R"({"dtype":"U8","shape":[1],"data_offsets":[0,1]})", 1), "t",
                 "unsupported dtype \"U8\"");
  CHECK_ST_ERROR(one(R"({"dtype":"f32","shape":[1],"data_offsets":[0,4]})", 4), "t",
                 "unsupported dtype \"f32\"");
  CHECK_ST_ERROR(one(R"({"dtype":4,"shape":[1],"data_offsets":[0,4]})", 4), "t",
                 "dtype is not a string");
}

TEST_CASE("safetensors rejects shapes that are not lists of non-negative integers") {
  CHECK_ST_ERROR(one(R"({"dtype":"F32","shape":3,"data_offsets":[0,12]})", 12), "t",
                 "shape is not a list");
  for (const char* bad : {"[-1]", "[2.0]", "[\"2\"]", "[null]", "[[2]]", "[true]"}) {
    CAPTURE(bad);
    CHECK_ST_ERROR(
        one(std::string(R"({"dtype":"F32","data_offsets":[0,0],"shape":)") + bad + "}", 0), "t",
        "shape is not a list of non-negative integers");
  }
}

TEST_CASE("safetensors rejects shapes with too many elements") {
  CHECK_ST_ERROR(one(R"({"dtype":"F32","shape":[18446744073709551615],"data_offsets":[0,0]})", 0),
                 "t", "dimension 18446744073709551615 is larger than 2^40");
  CHECK_ST_ERROR(one(R"({"dtype":"F32","shape":[1048576,1048577],"data_offsets":[0,0]})", 0), "t",
                 "shape [1048576, 1048577] has more than 2^40 elements");
  CHECK_ST_ERROR(
      one(R"({"dtype":"F32","shape":[1099511627776,1099511627776,0],"data_offsets":[0,0]})", 0),
      "t", "more than 2^40 elements");
}

TEST_CASE("safetensors rejects offsets that are not two integers") {
  for (const char* bad : {"[0]", "[0,4,4]", "[\"0\",4]", "[-1,4]", "[0,4.0]", "{}", "4",
                          "[0,18446744073709551616]"}) {
    CAPTURE(bad);
    CHECK_ST_ERROR(one(std::string(R"({"dtype":"F32","shape":[1],"data_offsets":)") + bad + "}", 4),
                   "t", "data_offsets is not a list of two non-negative integers");
  }
}

TEST_CASE("safetensors rejects offsets that end before they begin") {
  CHECK_ST_ERROR(one(R"({"dtype":"F32","shape":[0],"data_offsets":[4,0]})", 4), "t",
                 "data_offsets [4, 0] end before they begin");
}

TEST_CASE("safetensors rejects offsets past the data section") {
  CHECK_ST_ERROR(one(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})", 4), "t",
                 "data_offsets [0, 8] run past the end of the data section (4 bytes)");
  CHECK_ST_ERROR(
      one(R"({"dtype":"F32","shape":[1],"data_offsets":[18446744073709551612,18446744073709551615]})",
          4),
      "t", "run past the end of the data section");
}

TEST_CASE("safetensors rejects a range that does not match the shape") {
  CHECK_ST_ERROR(one(R"({"dtype":"F32","shape":[2,3],"data_offsets":[0,20]})", 20), "t",
                 "data_offsets [0, 20] hold 20 bytes but f32 [2, 3] needs 24");
  CHECK_ST_ERROR(one(R"({"dtype":"BF16","shape":[2],"data_offsets":[0,8]})", 8), "t",
                 "hold 8 bytes but bf16 [2] needs 4");
}

TEST_CASE("safetensors rejects overlapping tensors") {
  const std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
  CHECK_ST_ERROR(safetensors_image(header, std::string(8, '\0')), "b",
                 "data overlaps tensor \"a\"");
  const std::string same = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                           R"("b":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}})";
  CHECK_ST_ERROR(safetensors_image(same, std::string(4, '\0')), "b", "data overlaps tensor \"a\"");
}

TEST_CASE("safetensors rejects gaps and trailing bytes in the data section") {
  CHECK_ST_ERROR(one(R"({"dtype":"F32","shape":[1],"data_offsets":[4,8]})", 8), "t",
                 "data starts at byte 4, leaving a gap at byte 0");
  CHECK_ST_ERROR(one(R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})", 6), "header",
                 "tensors cover 4 bytes but the data section has 6");
}

TEST_CASE("safetensors rejects duplicate names") {
  const std::string header = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                             R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
  CHECK_ST_ERROR(safetensors_image(header, std::string(8, '\0')), "a", "duplicate tensor name");
  CHECK_ST_ERROR(one(R"({"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]})", 4),
                 "header", "duplicate key \"dtype\"");
  CHECK_ST_ERROR(safetensors_image(R"({"__metadata__":{"k":"1","k":"2"}})"), "header",
                 "duplicate key \"k\"");
}

TEST_CASE("safetensors rejects metadata that is not a map of strings") {
  CHECK_ST_ERROR(safetensors_image(R"({"__metadata__":["a"]})"), "__metadata__",
                 "is not an object of strings");
  CHECK_ST_ERROR(safetensors_image(R"({"__metadata__":null})"), "__metadata__",
                 "is not an object of strings");
  CHECK_ST_ERROR(safetensors_image(R"({"__metadata__":{"epoch":3}})"), "__metadata__",
                 "value of \"epoch\" is not a string");
}

TEST_CASE("safetensors error places are printable") {
  CHECK_ST_ERROR(safetensors_image(R"({"a\nb":[]})"), "a\\x0ab", "entry is not an object");
  CHECK_ST_ERROR(safetensors_image(R"({"":[]})"), "(empty name)", "entry is not an object");
  CHECK_ST_ERROR(safetensors_image("{\"" + std::string(300, 'x') + "\":[]}"),
                 std::string(200, 'x') + "...", "entry is not an object");
}
