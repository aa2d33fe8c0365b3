#include "generator/tune/calibration.hpp"
#include "generator/tune/database.hpp"
#include "runtime/error.hpp"
#include "tune_test_util.hpp"

#include <cmath>
#include <doctest/doctest.h>

using namespace kiln;
using namespace kiln::test;

namespace {

std::string error_of(const std::string& text) {
  try {
    parse_tuning_db(text, "db.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string valid_text() {
  TuningDb db = database();
  db.add(measurement("k1", "v_a", 0.5));
  db.add(measurement("k1", "v_b", 0.25));
  return tuning_db_to_json(db).dump(1);
}

} // namespace

TEST_CASE("tuning database: JSON round trip, sorted, winners derived") {
  TuningDb db = database();
  db.add(measurement("k2", "v_b", 0.5));
  db.add(measurement("k1", "v_b", 0.3));
  db.add(measurement("k1", "v_a", 0.2, "conv2d_igemm"));
  Measurement with_cudnn = measurement("k2", "v_a", 0.7);
  with_cudnn.cudnn_ms = 0.6;
  db.add(with_cudnn);
  const std::string text = tuning_db_to_json(db).dump(1);
  const TuningDb back = parse_tuning_db(text, "db.json");
  CHECK(tuning_db_to_json(back).dump(1) == text);
  REQUIRE(back.measurements.size() == 4);
  CHECK(back.measurements[0].key == "k1");
  CHECK(back.measurements[0].variant == "v_a");
  CHECK(back.measurements[3].cudnn_ms == std::nullopt);
  CHECK(back.measurements[2].cudnn_ms == 0.6);
  const auto w = back.winners();
  REQUIRE(w.size() == 2);
  CHECK(w.at("k1")->variant == "v_a");
  CHECK(w.at("k2")->variant == "v_b");

  const std::string dir = temp_dir();
  save_tuning_db(back, dir + "/sub/db.json");
  CHECK(tuning_db_to_json(load_tuning_db(dir + "/sub/db.json")).dump(1) == text);
  std::filesystem::remove_all(dir);
}

TEST_CASE("tuning database: adding keeps the faster of two measurements of a variant") {
  TuningDb db = database();
  CHECK(!db.add(measurement("k", "v", 0.5)));
  CHECK(db.add(measurement("k", "v", 0.7))); // slower: disagrees, kept 0.5
  CHECK(db.measurements.at(0).median_ms == 0.5);
  CHECK(db.add(measurement("k", "v", 0.4)));
  CHECK(db.measurements.at(0).median_ms == 0.4);
  CHECK(db.measurements.size() == 1);
}

TEST_CASE("tuning database: an emu database holds checked variants without timings") {
  TuningDb db = database();
  db.device = "emu";
  db.add(measurement("k", "v", std::nullopt));
  const TuningDb back = parse_tuning_db(tuning_db_to_json(db).dump(), "db.json");
  CHECK(back.device == "emu");
  CHECK(back.winners().empty()); // nothing timed, nothing won
  // Timings in an emu database, or none in a gpu one, are lies.
  TuningDb gpu = database();
  gpu.measurements.push_back(measurement("k", "v", std::nullopt));
  CHECK(error_of(tuning_db_to_json(gpu).dump()).find("timed measurements") != std::string::npos);
  db.measurements[0].median_ms = 1.0;
  db.measurements[0].runs = 20;
  CHECK(error_of(tuning_db_to_json(db).dump()).find("must be null") != std::string::npos);
}

TEST_CASE("tuning database: corrupt files are errors naming the place") {
  const std::string good = valid_text();
  CHECK(error_of(good).empty());
  CHECK(error_of(good.substr(0, good.size() / 2)).find("db.json") !=
        std::string::npos); // truncated
  CHECK(!error_of("").empty());
  CHECK(!error_of("[]").empty());
  auto edit = [&](auto&& f) {
    nlohmann::json j = nlohmann::json::parse(good);
    f(j);
    return error_of(j.dump());
  };
  CHECK(edit([](auto& j) { j["format"] = "kiln-tuning/2"; }).find("/format") != std::string::npos);
  CHECK(edit([](auto& j) { j.erase("gpu"); }).find("gpu") != std::string::npos);
  CHECK(edit([](auto& j) { j["extra"] = 1; }).find("extra") != std::string::npos);
  CHECK(edit([](auto& j) { j["measurements"] = 3; }).find("/measurements") != std::string::npos);
  CHECK(edit([](auto& j) {
          j["measurements"][0]["median_ms"] = "fast";
        }).find("/measurements/0/median_ms") != std::string::npos);
  CHECK(edit([](auto& j) { j["measurements"][1]["median_ms"] = -1; }).find("positive") !=
        std::string::npos);
  CHECK(edit([](auto& j) { j["measurements"][0]["runs"] = 1.5; }).find("runs") !=
        std::string::npos);
  CHECK(edit([](auto& j) { j["measurements"][0]["variant"] = ""; }).find("empty") !=
        std::string::npos);
  CHECK(edit([](auto& j) { j["measurements"][0]["layers"] = {1}; }).find("layers/0") !=
        std::string::npos);
  CHECK(edit([](auto& j) { j["measurements"][0]["colour"] = "red"; }).find("colour") !=
        std::string::npos);
  CHECK(edit([](auto& j) { j["measurements"][1] = j["measurements"][0]; }).find("same variant") !=
        std::string::npos);
  CHECK(edit([](auto& j) { j["device"] = "tpu"; }).find("/device") != std::string::npos);
}

TEST_CASE("tuning database: selection ignores a corrupt or foreign one with a warning") {
  const GpuDesc g = load_gpu("h100");
  const std::string dir = temp_dir();
  CHECK_THROWS_AS(load_tuning_for(g, dir + "/missing.json"), Error); // named, absent: an error
  CHECK(!load_tuning_for(g, "none"));
  write(dir + "/trunc.json", valid_text().substr(0, 40));
  CHECK(!load_tuning_for(g, dir + "/trunc.json"));
  write(dir + "/foreign.json", valid_text()); // identity NVIDIA H100@00000000
  CHECK(!load_tuning_for(g, dir + "/foreign.json"));
  TuningDb mine = empty_tuning_db(g, "gpu");
  mine.add(measurement("k", "v", 0.1));
  save_tuning_db(mine, dir + "/mine.json");
  CHECK(load_tuning_for(g, dir + "/mine.json"));
  mine.kiln_version = "0.0.0-other";
  save_tuning_db(mine, dir + "/old.json");
  CHECK(!load_tuning_for(g, dir + "/old.json"));
  CHECK(tuning_fingerprint(g, dir + "/mine.json") != tuning_fingerprint(g, dir + "/old.json"));
  CHECK(tuning_fingerprint(g, "none").empty());
  std::filesystem::remove_all(dir);
}

TEST_CASE("calibration: per-family factor and prediction error before and after") {
  TuningDb db = database();
  // direct: measured 2x, 2x, 8x its predictions -> factor 2 (the median), worst after 4.
  db.add(measurement("a", "d1", 0.020, "direct", 10));
  db.add(measurement("b", "d2", 0.040, "direct", 20));
  db.add(measurement("c", "d3", 0.080, "direct", 10));
  db.add(measurement("a", "i1", 0.005, "igemm", 10)); // half its prediction
  const auto fits = fit_families(db);
  REQUIRE(fits.size() == 2);
  CHECK(fits[0].family == "direct");
  CHECK(fits[0].samples == 3);
  CHECK(fits[0].factor == doctest::Approx(2));
  CHECK(fits[0].before_median == doctest::Approx(2));
  CHECK(fits[0].before_worst == doctest::Approx(8));
  CHECK(fits[0].after_median == doctest::Approx(1));
  CHECK(fits[0].after_worst == doctest::Approx(4));
  CHECK(fits[1].factor == doctest::Approx(0.5));
  CHECK(fits[1].after_worst == doctest::Approx(1));
}
