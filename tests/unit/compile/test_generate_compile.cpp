// kiln generate + compile: names from the model reach kernel sources only as escaped
// comments; compile errors show the kernel, the log and the offending lines; the cache
// turns a second compile into hits; nvcc produces cubins and a fatbin.
#include "generator/compile/compile_dir.hpp"
#include "generator/emit/generate.hpp"
#include "generator/model/model_json.hpp"
#include "runtime/error.hpp"
#include "runtime/io/file.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace kiln;
namespace fs = std::filesystem;

namespace {

std::string scratch() {
  std::string d = (fs::temp_directory_path() / "kiln-gen-test-XXXXXX").string();
  REQUIRE(mkdtemp(d.data()));
  return d;
}

std::string read(const std::string& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Layer and model names full of things that must not become code.
const char* evil_model = R"({"format": "kiln-model/1",
  "name": "evil \"model\" */ #include <stdio.h>\n\u00e9\u2603",
  "input": {"name": "in\\put", "shape": [1, 3, 9, 9]},
  "layers": [
    {"name": "conv */ exit(1); /*", "op": "conv2d", "out_channels": 4, "kernel": 3, "padding": 1},
    {"name": "relu\n#include \"/etc/passwd\"\nint x = ", "op": "relu"},
    {"name": "pool \\\n continued", "op": "maxpool2d", "kernel": 2},
    {"name": "flat\u00e9 \"q\"", "op": "flatten"},
    {"name": "fc ??/ trigraph", "op": "linear", "out_features": 3}]})";

} // namespace

TEST_CASE("names with quotes, backslashes, newlines, */, #include and non-ASCII never act as code") {
  const Model m = parse_model(evil_model, "evil.json");
  const std::string dir = scratch() + "/out";
  const Generated gen = generate(m, load_gpu("h200"), {});
  write_generated(gen, dir);
  int sources = 0;
  for (const auto& f : fs::directory_iterator(dir + "/kernels")) {
    const std::string text = read(f.path());
    ++sources;
    // Every line that mentions user text is a // comment; no raw newline or quote escaped it.
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      if (line.find("include") != std::string::npos && line.rfind("//", 0) != 0)
        CHECK(line.rfind("#include \"", 0) == 0); // only the template include
      for (unsigned char ch : line) CHECK(ch < 0x80); // ASCII only
      if (line.find("passwd") != std::string::npos || line.find("exit(1)") != std::string::npos ||
          line.find("evil") != std::string::npos)
        CHECK(line.rfind("//", 0) == 0);
    }
  }
  CHECK(sources > 0);
  // And everything compiles, for the device and for the emulator.
  CompileOptions co;
  co.cache_dir = scratch();
  CHECK_NOTHROW(compile_dir(dir, co));
  co.compiler = "host";
  CHECK_NOTHROW(compile_dir(dir, co));
  CHECK(fs::exists(emu_library_path(dir)));
}

TEST_CASE("a compile error names the kernel, shows the log and the offending line, and throws CompileFailed") {
  const Model m = load_model(KILN_SOURCE_ROOT "/models/noscope_coral.json");
  const std::string dir = scratch() + "/out";
  write_generated(generate(m, load_gpu("a100"), {}), dir);
  std::string victim;
  for (const auto& f : fs::directory_iterator(dir + "/kernels")) victim = f.path();
  std::string text = read(victim);
  text += "\nstatic_assert(sizeof(int) == 3, \"planted error\");\n";
  io::write_file_atomic(victim, text);
  CompileOptions co;
  co.cache_dir = scratch();
  try {
    compile_dir(dir, co);
    FAIL("a broken kernel compiled");
  } catch (const CompileFailed& e) {
    const std::string w = e.what();
    CHECK(w.find(fs::path(victim).stem().string()) != std::string::npos); // the kernel
    CHECK(w.find("planted error") != std::string::npos);                  // the log
    CHECK(w.find("static_assert(sizeof(int) == 3") != std::string::npos); // the source line
    CHECK(w.find("-->") != std::string::npos);
  }
}

TEST_CASE("the second compile comes from the cache; resources go into the manifest") {
  const Model m = load_model(KILN_SOURCE_ROOT "/models/noscope_roundabout.json");
  const std::string dir = scratch() + "/out";
  write_generated(generate(m, load_gpu("h200"), {}), dir);
  CompileOptions co;
  co.cache_dir = scratch();
  const CompileSummary first = compile_dir(dir, co);
  CHECK(first.compiled == first.kernels);
  CHECK(first.cached == 0);
  const CompileSummary second = compile_dir(dir, co);
  CHECK(second.cached == second.kernels);
  CHECK(second.compiled == 0);
  const auto man = nlohmann::json::parse(read(dir + "/manifest.json"));
  for (const auto& k : man["kernels"]) {
    CHECK(k["compiled"]["registers"].get<int>() > 0);
    CHECK(fs::exists(dir + "/" + k["compiled"]["image"].get<std::string>()));
  }
}

TEST_CASE("nvcc produces the cubins and one fatbin") {
  const Model m = parse_model(R"({"format": "kiln-model/1", "name": "tiny", "input": {"shape": [1, 2, 4, 4]},
    "layers": [{"name": "r", "op": "relu"}, {"name": "a", "op": "add", "inputs": ["r", "input"]}]})", "tiny.json");
  const std::string dir = scratch() + "/out";
  write_generated(generate(m, load_gpu("a100"), {}), dir);
  CompileOptions co;
  co.compiler = "nvcc";
  co.cache_dir = scratch();
  const CompileSummary s = compile_dir(dir, co);
  CHECK(s.compiled == 2);
  CHECK(fs::file_size(dir + "/kernels.fatbin") > 0);
  for (const auto& f : fs::directory_iterator(dir + "/kernels"))
    if (f.path().extension() == ".cu") CHECK(fs::exists(f.path().string().substr(0, f.path().string().size() - 3) + ".cubin"));
}

TEST_CASE("generating twice gives identical bytes") {
  const Model m = load_model(KILN_SOURCE_ROOT "/models/resnet18.json");
  const Generated a = generate(m, load_gpu("h200"), {}), b = generate(m, load_gpu("h200"), {});
  CHECK(a.files == b.files);
}
