// A small model that uses every op, with branches (add, concat), views and a softmax
// output: the lowering's test subject.
#pragma once

#include "generator/model/model_json.hpp"
#include "generator/model/overrides.hpp"

inline kiln::Model every_op_model(kiln::DType dtype = kiln::DType::f64, int64_t batch = 2) {
  kiln::Model m = kiln::parse_model(R"({"format": "kiln-model/1", "name": "every_op",
  "input": {"name": "image", "shape": [2, 3, 9, 9]},
  "layers": [
    {"name": "c1", "op": "conv2d", "out_channels": 4, "kernel": 3, "padding": 1},
    {"name": "bn1", "op": "batchnorm"},
    {"name": "r1", "op": "relu"},
    {"name": "c2", "op": "conv2d", "out_channels": 4, "kernel": [3, 1], "padding": [1, 0], "groups": 2, "bias": false},
    {"name": "hs", "op": "hardswish", "inputs": ["c2"]},
    {"name": "cl", "op": "clip", "min": -0.5, "max": 1.5},
    {"name": "ge", "op": "gelu"},
    {"name": "gt", "op": "gelu_tanh"},
    {"name": "si", "op": "silu"},
    {"name": "hsg", "op": "hardsigmoid", "alpha": 0.3, "beta": 0.45},
    {"name": "sg", "op": "sigmoid"},
    {"name": "add", "op": "add", "inputs": ["sg", "r1"]},
    {"name": "se_pool", "op": "global_avgpool"},
    {"name": "se_gate", "op": "sigmoid"},
    {"name": "se", "op": "mul", "inputs": ["add", "se_gate"]},
    {"name": "sq", "op": "mul", "inputs": ["se", "r1"]},
    {"name": "ln", "op": "layernorm", "eps": 0.001},
    {"name": "rsum", "op": "reduce_sum", "reduce_h": true, "inputs": ["sq"]},
    {"name": "rmean", "op": "reduce_mean", "reduce_c": true, "reduce_w": true, "keepdims": false},
    {"name": "rmax", "op": "reduce_max", "reduce_c": true, "reduce_w": true, "keepdims": false, "inputs": ["sq"]},
    {"name": "rmc", "op": "reduce_max", "reduce_c": true, "inputs": ["ln"]},
    {"name": "shuf", "op": "channel_shuffle", "groups": 2, "inputs": ["ln"]},
    {"name": "half", "op": "channel_slice", "begin": 1, "end": 3},
    {"name": "rest", "op": "channel_slice", "begin": 0, "end": 2, "inputs": ["shuf"]},
    {"name": "linv", "op": "layernorm_invstd", "eps": 0.01, "inputs": ["sq"]},
    {"name": "joined", "op": "concat", "inputs": ["rest", "half", "rmc", "linv"]},
    {"name": "mp", "op": "maxpool2d", "kernel": 2, "ceil_mode": true},
    {"name": "up", "op": "upsample2d", "scale": 2},
    {"name": "bl", "op": "resize", "mode": "linear", "coordinate_transformation_mode": "half_pixel", "scale": [0.5, 0.55]},
    {"name": "ap", "op": "avgpool2d", "kernel": 3, "stride": 2, "padding": 1, "count_include_pad": false, "inputs": ["up"]},
    {"name": "pr", "op": "pad", "padding": [1, 0], "padding_end": [0, 2], "mode": "reflect", "inputs": ["bl"]},
    {"name": "ct", "op": "conv_transpose2d", "out_channels": 4, "kernel": 3, "stride": 2, "padding": 1, "output_padding": 1, "groups": 2},
    {"name": "pe", "op": "pad", "padding": [1, 0], "padding_end": [0, 1], "mode": "edge"},
    {"name": "pc", "op": "pad", "padding": [0, 1], "value": -0.25},
    {"name": "s2d", "op": "space_to_depth", "factor": 2, "padding": [1, 0], "size": [6, 10], "out_channels": 20},
    {"name": "bl2", "op": "resize", "mode": "linear", "coordinate_transformation_mode": "align_corners", "size": 5},
    {"name": "cat", "op": "concat", "inputs": ["ap", "mp", "bl2", "ap"]},
    {"name": "c3", "op": "conv2d", "out_channels": 6, "kernel": 2, "stride": 2, "dilation": 1},
    {"name": "aap", "op": "adaptive_avgpool2d", "output_size": [2, 1], "inputs": ["cat"]},
    {"name": "gap", "op": "global_avgpool", "inputs": ["c3"]},
    {"name": "f1", "op": "flatten", "inputs": ["gap"]},
    {"name": "f2", "op": "flatten", "inputs": ["aap"]},
    {"name": "cat2", "op": "concat", "inputs": ["f1", "f2", "rmean", "rmax"]},
    {"name": "bn2", "op": "batchnorm"},
    {"name": "fc", "op": "linear", "out_features": 5},
    {"name": "prob", "op": "softmax"}]})",
                                    "every_op.json");
  kiln::ModelOverrides o;
  o.dtype = dtype;
  o.batch = batch;
  kiln::apply_overrides(m, o);
  return m;
}
