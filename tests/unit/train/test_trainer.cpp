// The training loop as a library (generator/train/trainer.hpp), without the CLI: what the
// observer sees, the checkpoint it writes, a resumed run equal to an uninterrupted one bit
// for bit, and inputs refused before anything is written.
#include "generator/train/checkpoint.hpp"
#include "generator/train/trainer.hpp"
#include "runtime/error.hpp"
#include "runtime/io/file.hpp"
#include "runtime/io/npy.hpp"
#include "runtime/param_init.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <doctest/doctest.h>
#include <filesystem>
#include <vector>

using namespace kiln;
namespace fs = std::filesystem;

namespace {

// A scratch directory with a two-class linear model on 2x3x3 inputs and 10 samples.
struct Task {
  std::string dir;
  Task() {
    char tmpl[] = "/tmp/kiln-train-test-XXXXXX";
    REQUIRE(mkdtemp(tmpl));
    dir = tmpl;
    io::write_file_atomic(dir + "/tiny.json",
                          R"({"format": "kiln-model/1", "name": "tiny",
                              "input": {"name": "x", "shape": [1, 2, 3, 3]},
                              "layers": [{"name": "flat", "op": "flatten"},
                                         {"name": "fc", "op": "linear", "out_features": 2}]})");
    Tensor x(DType::f32, {10, 2, 3, 3});
    Tensor y(DType::i64, {10});
    uint64_t state = 7;
    for (int64_t i = 0; i < x.numel(); ++i)
      x.set(i, double(splitmix64(state) >> 11) * 0x1.0p-52 - 0.5);
    for (int64_t i = 0; i < 10; ++i)
      y.set(i, double(i % 2));
    io::write_npy(dir + "/x.npy", x);
    io::write_npy(dir + "/y.npy", y);
  }
  ~Task() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  TrainOptions options(const std::string& out, int64_t epochs) const {
    TrainOptions o;
    o.model = dir + "/tiny.json";
    o.data = dir + "/x.npy";
    o.labels = dir + "/y.npy";
    o.val_data = dir + "/x.npy";
    o.val_labels = dir + "/y.npy";
    o.batch = 4;
    o.epochs = epochs;
    o.recipe.optimizer = Optimizer::adam;
    o.lr = 0.01;
    o.seed = 3;
    o.output = dir + "/" + out;
    return o;
  }
};

struct Seen : TrainObserver {
  std::vector<TrainProgress> steps;
  std::vector<EpochResult> epochs;
  void step(const TrainProgress& p) override { steps.push_back(p); }
  void epoch(const EpochResult& e) override { epochs.push_back(e); }
};

} // namespace

TEST_CASE("the trainer reports every step and epoch and writes a checkpoint per epoch") {
  const Task t;
  Trainer trainer(t.options("w.safetensors", 3));
  const TrainSetup& u = trainer.setup();
  CHECK(u.batch == 4);
  CHECK(u.images == 10);
  CHECK(u.steps == 2);   // 10 images in batches of 4
  CHECK(u.dropped == 2); // the last partial batch
  CHECK_FALSE(u.resumed);
  CHECK_FALSE(u.schedule);
  CHECK_FALSE(fs::exists(t.dir + "/w.safetensors")); // nothing written before run()
  Seen seen;
  const TrainResult r = trainer.run(&seen);
  CHECK(r.epochs == 3);
  REQUIRE(seen.steps.size() == 6);
  CHECK(seen.steps[1].step == 2);
  CHECK(seen.steps[1].steps == 2);
  CHECK(seen.steps[5].epoch == 2);
  REQUIRE(seen.epochs.size() == 3);
  for (const EpochResult& e : seen.epochs) {
    CHECK(std::isfinite(e.loss));
    REQUIRE(e.val_accuracy);
    CHECK(*e.val_accuracy >= 0);
    CHECK(*e.val_accuracy <= 1);
  }
  CHECK(seen.epochs.back().epoch == 3);
  CHECK(r.best_val_accuracy);
  const Checkpoint c = read_checkpoint(t.dir + "/w.safetensors");
  CHECK(c.epoch == 3);
  CHECK(c.step == 6);
  CHECK(c.params.count("fc.weight"));
}

TEST_CASE("a resumed run equals an uninterrupted one bit for bit") {
  const Task t;
  Trainer(t.options("straight.safetensors", 4)).run();
  Trainer(t.options("split.safetensors", 2)).run();
  TrainOptions o = t.options("split.safetensors", 4);
  o.resume = true;
  Trainer resumed(o);
  CHECK(resumed.setup().resumed);
  CHECK(resumed.setup().first_epoch == 2);
  CHECK(resumed.setup().first_step == 4);
  CHECK(resumed.run().epochs == 2);
  const Checkpoint a = read_checkpoint(t.dir + "/straight.safetensors");
  const Checkpoint b = read_checkpoint(t.dir + "/split.safetensors");
  REQUIRE(a.params.size() == b.params.size());
  for (const auto& [name, w] : a.params) {
    const Tensor& v = b.params.at(name);
    REQUIRE(v.nbytes() == w.nbytes());
    CHECK(std::memcmp(v.bytes(), w.bytes(), w.nbytes()) == 0);
  }
}

TEST_CASE("bad input is refused before anything is written") {
  const Task t;
  TrainOptions o = t.options("w.safetensors", 1);
  o.lr = -1;
  CHECK_THROWS_AS(Trainer{o}, Error);
  o = t.options("w.safetensors", 1);
  o.batch = 11;
  CHECK_THROWS_WITH_AS(Trainer{o}, doctest::Contains("fewer than one batch"), Error);
  o = t.options("w.safetensors", 1);
  o.resume = true; // no checkpoint to continue
  CHECK_THROWS_AS(Trainer{o}, Error);
  CHECK_FALSE(fs::exists(t.dir + "/w.safetensors"));
}
