// The shipped example models against published parameter counts and MACs.
#include "generator/model/model_json.hpp"

#include <doctest/doctest.h>

using namespace kiln;

namespace {

Model load(const std::string& name) { return load_model(std::string(KILN_SOURCE_ROOT "/models/") + name + ".json"); }

} // namespace

TEST_CASE("torchvision parameter counts") {
  CHECK(load("resnet18").total_params() == 11689512);
  CHECK(load("resnet50").total_params() == 25557032);
  CHECK(load("resnet152").total_params() == 60192808);
  CHECK(load("vgg16").total_params() == 138357544);
  CHECK(load("densenet121").total_params() == 7978856);
  CHECK(load("densenet201").total_params() == 20013928);
}

TEST_CASE("MACs at 224x224") {
  CHECK(load("resnet50").total_macs() == 4089184256);  // "4.09 GMACs"
  CHECK(load("resnet18").total_macs() == 1814073344);  // 1.81 G
  CHECK(load("resnet152").total_macs() == 11513626624); // 11.51 G
  CHECK(load("vgg16").total_macs() == 15470264320);    // 15.47 G
  CHECK(load("densenet121").total_macs() == 2834161664); // 2.83 G
  CHECK(load("densenet201").total_macs() == 4291365888); // 4.29 G
}

TEST_CASE("CIFAR ResNets, UNet and the NoScope models") {
  const Model r32 = load("resnet32");
  CHECK(r32.total_params() == 466906);
  CHECK(r32.input_shape == Shape{1, 3, 32, 32});
  CHECK(load("resnet1202").total_params() == 19424026);
  const Model unet = load("unet");
  CHECK(unet.total_params() == 17263042);
  CHECK(unet.nodes[unet.outputs[0]].shape == Shape{1, 2, 256, 256});
  const Model coral = load("noscope_coral");
  CHECK(coral.total_params() == 1283154);
  CHECK(coral.nodes[coral.find("fc1")].shape == Shape{1, 128});
  CHECK(coral.params(coral.find("fc1"))[0].shape == Shape{128, 10000});
  const Model round = load("noscope_roundabout");
  CHECK(round.total_params() == 360578);
  CHECK(round.params(round.find("fc1"))[0].shape == Shape{32, 9216});
}

TEST_CASE("example models are saved canonically") {
  for (const char* name : {"resnet18", "densenet121", "unet", "noscope_coral", "vgg16"}) {
    const Model m = load(name);
    CHECK(parse_model(model_to_text(m), "x").total_params() == m.total_params());
  }
}
