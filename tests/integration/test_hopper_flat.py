"""The Hopper family's flat tiles (FLAT: a tile is 64 or 128 consecutive rows of the GEMM, for
1x1 stride-1 unpadded convs and linear layers) through the whole path on the emulator:
`kiln bench --device emu` builds each variant's plan, binds its tensor maps (x as one 2-D map
[N * H * W][C]) and checks it against the cpu reference, in f16 and f32 (tf32 on the tensor
cores; emu_hopper runs bf16 flat instances), on a small block whose 1x1 convs read NHWC
activations (the network input is NCHW, which the family does not read) and whose head is two
linear layers. Then where the cost model chooses them at full size: resnet50's 1x1 convs at
batch 256, vgg16's classifier at batch 256 (both f16 on the h100). And the family's y written
through a pitch (Y_PITCH: two 64-channel convs whose outputs are pitched views of their
concat's, channel_views.cpp) and its x read through one (a channel slice as a pitched view:
the tensor maps' strides), every tile shape checked the same way. And narrow swizzles
(SWIZZLE 64 and 32) for channels whose bytes are not a multiple of 128, row tiles for strided
1x1 convs, folded taps for the space_to_depth stem's conv, and the ping-pong consumers and several
k iterations a stage (both chosen only when measured)."""
import csv
import json
import os

import kiln_test as kt

d = kt.tmpdir()


def path(*p):
    return os.path.join(d, *p)


layers = [{"name": "c0", "op": "conv2d", "out_channels": 64, "kernel": 3, "padding": 1, "bias": False},
          {"name": "r0", "op": "relu"},
          {"name": "c1", "op": "conv2d", "out_channels": 128, "kernel": 1},
          {"name": "r1", "op": "relu"},
          {"name": "c2", "op": "conv2d", "out_channels": 64, "kernel": 1, "bias": False},
          {"name": "add", "op": "add", "inputs": ["c2", "r0"]},
          {"name": "gap", "op": "global_avgpool"},
          {"name": "flatten", "op": "flatten"},
          {"name": "fc1", "op": "linear", "out_features": 64},
          {"name": "r2", "op": "relu"},
          {"name": "fc2", "op": "linear", "out_features": 40}]
model = path("flat.json")
with open(model, "w") as f:
    json.dump({"format": "kiln-model/1", "name": "flat", "input": {"shape": [5, 64, 6, 6]},
               "layers": layers}, f)

# Each sweep below keeps to the variants it is about (--match; beside each layer's pick): the
# others are the pixel tiles emu_hopper and hopper_run check, and a host compile each.
for dtype in ("f16", "f32"):
    out = path(f"bench_{dtype}")
    kt.kiln("bench", model, "--gpu", "h100", "--device", "emu", "--dtype", dtype, "-o", out,
            "--match", "_flat_,linear_hopper")
    rows = list(csv.DictReader(open(path(out, "sweep.csv"))))
    failed = [r["variant"] for r in rows if r["check"] != "pass"]
    kt.check(not failed, f"{dtype}: variants failed their check: {failed}")
    flat_convs = [r for r in rows if r["variant"].startswith("conv2d_hopper_wgmma") and "_flat_" in r["variant"]]
    linears = [r for r in rows if r["variant"].startswith("linear_hopper_wgmma")]
    # c1 and c2 with BN 64 (f16: and c1 with 128), one or two consumers each; fc1 (its relu
    # fused) and fc2, one or two consumers each.
    kt.check(len(flat_convs) >= (6 if dtype == "f16" else 4), f"{dtype}: {len(flat_convs)} flat Hopper conv variants checked")
    kt.check(len(linears) >= 4, f"{dtype}: {len(linears)} Hopper linear variants checked")
    kt.check(all(r["family"] == "conv2d_hopper_wgmma" for r in flat_convs + linears),
             f"{dtype}: a flat variant outside the Hopper family")
    print(f"{dtype}: {len(rows)} variants checked on the emulator, {len(flat_convs)} flat convs "
          f"and {len(linears)} linear layers on the Hopper family among them")


# Narrow swizzles (SWIZZLE 64 and 32): channels whose bytes are not a multiple of 128, as in
# mobile nets (16, 48 in f16: rows of 32 and 96 bytes; f32: 64 and 192).
narrow = path("narrow.json")
with open(narrow, "w") as f:
    json.dump({"format": "kiln-model/1", "name": "narrow", "input": {"shape": [2, 16, 10, 10]},
               "layers": [{"name": "c0", "op": "conv2d", "out_channels": 16, "kernel": 3, "padding": 1},
                          {"name": "r0", "op": "relu"},
                          {"name": "c1", "op": "conv2d", "out_channels": 48, "kernel": 1},
                          {"name": "r1", "op": "relu"},
                          {"name": "c2", "op": "conv2d", "out_channels": 64, "kernel": 3, "padding": 1}]},
              f)
# f16: c1 and c2 on 32-byte rows (16 and 48 channels), every tile shape; f32: c1 on 64-byte
# rows (c2, small in f32, is split along K there, which the family does not serve).
for dtype, w, least in (("f16", "_w32_", 16), ("f32", "_w64_", 9)):
    out = path(f"narrow_{dtype}")
    kt.kiln("bench", narrow, "--gpu", "h100", "--device", "emu", "--dtype", dtype, "--layers", "c1,c2",
            "-o", out, "--match", w)
    rows = list(csv.DictReader(open(path(out, "sweep.csv"))))
    failed = [r["variant"] for r in rows if r["check"] != "pass"]
    kt.check(not failed, f"narrow {dtype}: variants failed their check: {failed}")
    hopper = [r for r in rows if r["family"] == "conv2d_hopper_wgmma"]
    kt.check(sum(w in r["variant"] for r in hopper) >= least,
             f"narrow {dtype}: {sum(w in r['variant'] for r in hopper)} Hopper variants with {w}")
    print(f"narrow {dtype}: {len(hopper)} Hopper variants of narrow swizzle checked on the emulator")


def bench_layer(name, shape, layers, layer, match=None):
    """Every variant of one layer of a small model on the emulator (those whose names hold one
    of `match`'s strings, where given), each checked against the cpu reference: the rows of
    its sweep, all of which passed."""
    model = path(f"{name}.json")
    with open(model, "w") as f:
        json.dump({"format": "kiln-model/1", "name": name, "input": {"shape": shape}, "layers": layers}, f)
    out = path(f"{name}_f16")
    kt.kiln("bench", model, "--gpu", "h100", "--device", "emu", "--dtype", "f16", "--layers", layer, "-o", out,
            *(["--match", match] if match else []))
    rows = list(csv.DictReader(open(path(out, "sweep.csv"))))
    kt.check(not [r for r in rows if r["check"] != "pass"], f"{name}: a variant of {layer} failed its check")
    return rows


# Row tiles (ROW_TILES): a strided 1x1 downsample's tiles are whole output rows across images,
# read as one box of a 3-D map of x's rows SH apart (7x7 outputs at batch 3: 21 rows).
rows = bench_layer("rows", [3, 64, 14, 14],
                   [{"name": "c0", "op": "conv2d", "out_channels": 64, "kernel": 1},
                    {"name": "r0", "op": "relu"},
                    {"name": "ds", "op": "conv2d", "out_channels": 128, "kernel": 1, "stride": 2}], "ds",
                   "_rows")
row_tiled = [r for r in rows if "_rows9x7_" in r["variant"] or "_rows18x7_" in r["variant"]]
kt.check(len(row_tiled) >= 4, f"{len(row_tiled)} row-tiled Hopper variants checked")
print(f"strided 1x1 (f16, batch 3, 14x14 -> 7x7): {len(row_tiled)} row-tiled Hopper variants checked on the emulator")
row_pp = [r for r in row_tiled if "_pp_" in r["variant"]]
kt.check(len(row_pp) >= 1, f"{len(row_pp)} ping-pong row-tiled Hopper variants checked")

# im2col tiles (IM2COL): 64 or 128 consecutive output pixels of all rows and images a tile, each
# tap's A one im2col-mode copy: a 3x3 over 16x16 at batch 8 (2048 rows, tiles across images)
# and a strided one over 32x32 (smaller shapes go to split-K, which the family does not serve).
# Chosen only when measured (no GPU has run one yet).
i2c = []
for name, shape, conv in (("im2col", [8, 64, 16, 16], {"kernel": 3, "padding": 1}),
                          ("im2col_s2", [8, 64, 32, 32], {"kernel": 3, "padding": 1, "stride": 2})):
    rows = bench_layer(name, shape,
                       [{"name": "c0", "op": "conv2d", "out_channels": 64, "kernel": 1},
                        {"name": "r0", "op": "relu"},
                        {"name": "c1", "op": "conv2d", "out_channels": 128, **conv}], "c1", "im2col")
    i2c += [r for r in rows if "_im2col_" in r["variant"]]
kt.check(len(i2c) >= 16, f"{len(i2c)} im2col Hopper variants checked")
kt.check(any("k3x3s2x2p1x1" in r["variant"] for r in i2c), "no strided im2col variant checked")
kt.check(all(r["model_choice"] != "1" for r in i2c), "an im2col variant chosen without a measurement")
print(f"3x3 convs (f16, batch 8, 16x16, and 32x32 stride 2): {len(i2c)} im2col Hopper variants checked on the emulator")

# Folded taps (TAPS_ROW): a stride-1 conv unpadded across, whose 4 taps of 16 f16 channels make
# one 128-byte row (the space_to_depth stem's conv), read through a map of overlapping rows.
# Chosen only when measured (whether a driver encodes such a map is untested), so checked here
# through every variant.
rows = bench_layer("taps", [3, 16, 10, 13],
                   [{"name": "c0", "op": "conv2d", "out_channels": 16, "kernel": 1},
                    {"name": "r0", "op": "relu"},
                    {"name": "c1", "op": "conv2d", "out_channels": 64, "kernel": 4, "padding": [1, 0]},
                    {"name": "r1", "op": "relu"}], "c1")
folded = [r for r in rows if "_taps4_" in r["variant"]]
kt.check(len(folded) >= 7, f"{len(folded)} folded-taps Hopper variants checked")
kt.check(all(r["model_choice"] != "1" for r in folded), "a folded-taps variant chosen without a measurement")
print(f"4x4 conv over 16 channels (f16, batch 3): {len(folded)} folded-taps Hopper variants checked on the emulator")
# Ping-pong consumers (PINGPONG: a whole tile each in turn) and 4 of the 32-byte rows a stage
# (KBLOCKS), both chosen only when measured: checked here through every variant.
kblocks = [r for r in rows if "_kb4" in r["variant"]]
pingpong = [r for r in rows if "_pp_" in r["variant"]]
kt.check(len(kblocks) >= 7 and len(pingpong) >= 4,
         f"{len(kblocks)} Hopper variants of 4 k iterations a stage, {len(pingpong)} ping-pong ones checked")
kt.check(any("_pp_" in r["variant"] and "_kb4" in r["variant"] for r in rows), "no ping-pong variant of 4 k iterations a stage")
kt.check(all(r["model_choice"] != "1" for r in kblocks + pingpong),
         "a ping-pong or several-k-iterations variant chosen without a measurement")
print(f"4x4 conv over 16 channels (f16, batch 3): {len(kblocks)} variants of 4 k iterations a stage and "
      f"{len(pingpong)} ping-pong ones checked on the emulator")


# Two branches concatenated: their convs write into the concat's output through its pitch.
cat_layers = [{"name": "stem", "op": "conv2d", "out_channels": 64, "kernel": 3, "padding": 1},
              {"name": "a", "op": "conv2d", "out_channels": 64, "kernel": 1, "inputs": ["stem"]},
              {"name": "ra", "op": "relu"},
              {"name": "b", "op": "conv2d", "out_channels": 64, "kernel": 3, "padding": 1, "inputs": ["stem"]},
              {"name": "cat", "op": "concat", "inputs": ["ra", "b"]},
              {"name": "head", "op": "conv2d", "out_channels": 8, "kernel": 1},
              {"name": "gap", "op": "global_avgpool"},
              {"name": "flatten", "op": "flatten"},
              {"name": "fc", "op": "linear", "out_features": 3}]
with open(path("cat.json"), "w") as f:
    json.dump({"format": "kiln-model/1", "name": "cat", "input": {"shape": [2, 8, 6, 6]}, "layers": cat_layers}, f)
out = path("bench_cat")
kt.kiln("bench", path("cat.json"), "--gpu", "h100", "--device", "emu", "--dtype", "f16", "-o", out,
        "--match", "_yp128_")
rows = list(csv.DictReader(open(path(out, "sweep.csv"))))
pitched = [r for r in rows if r["variant"].startswith("conv2d_hopper_wgmma") and "_yp128_" in r["variant"]]
kt.check(not [r for r in rows if r["check"] != "pass"], "a variant of the concat model failed its check")
# a (1x1, relu fused): the Hopper family's nine tile shapes; b (3x3) is split in the kernel at
# this size: both families' split-K completions write through the pitch there.
split = [r for r in rows if "split" in r["variant"] and "_yp128_" in r["variant"]]
kt.check(len(pitched) >= 9, f"{len(pitched)} Hopper variants writing through a pitch checked")
kt.check(len(split) >= 4, f"{len(split)} split-K variants writing through a pitch checked")
print(f"concat of two 64-channel convs (f16, batch 2): {len(pitched)} Hopper and {len(split)} in-kernel "
      f"split-K variants writing through a pitch of 128 checked on the emulator")


# A channel slice a conv reads: a pitched view of its input, read through the x maps' strides.
slice_layers = [{"name": "stem", "op": "conv2d", "out_channels": 128, "kernel": 3, "padding": 1},
                {"name": "half", "op": "channel_slice", "begin": 64, "end": 128},
                {"name": "c", "op": "conv2d", "out_channels": 64, "kernel": 1},
                {"name": "rc", "op": "relu"},
                {"name": "d", "op": "conv2d", "out_channels": 64, "kernel": 3, "padding": 1},
                {"name": "gap", "op": "global_avgpool"},
                {"name": "flatten", "op": "flatten"},
                {"name": "fc", "op": "linear", "out_features": 3}]
with open(path("slice.json"), "w") as f:
    json.dump({"format": "kiln-model/1", "name": "slice", "input": {"shape": [2, 8, 6, 6]},
               "layers": slice_layers}, f)
out = path("bench_slice")
kt.kiln("bench", path("slice.json"), "--gpu", "h100", "--device", "emu", "--dtype", "f16", "-o", out,
        "--match", "_xp128")
rows = list(csv.DictReader(open(path(out, "sweep.csv"))))
read = [r for r in rows if r["variant"].startswith("conv2d_hopper_wgmma") and "_xp128" in r["variant"]]
kt.check(not [r for r in rows if r["check"] != "pass"], "a variant of the slice model failed its check")
kt.check(len(read) >= 9, f"{len(read)} Hopper variants reading through a pitch checked")
print(f"a channel slice read by a 1x1 conv (f16, batch 2): {len(read)} Hopper variants reading through a "
      f"pitch of 128 checked on the emulator")


def chosen(model, batch):
    out = path(f"{model}_{batch}")
    kt.kiln("generate", model, "--gpu", "h100", "--dtype", "f16", "--batch", batch, "-o", out)
    man = json.load(open(path(out, "manifest.json")))
    return [k for k in man["kernels"] if k["chosen"] and k["family"] == "conv2d_hopper_wgmma"]


# As the cost model chose on 2026-11-26: resnet50 b256, 7 of its 1x1 convs on flat tiles (the
# 7x7, 14x14 and 28x28 maps, where 8x8 or 8x16 pixel tiles leave rows idle); vgg16 b256, fc6 and fc7.
flat = [k for k in chosen("resnet50", 256) if k["params"].get("FLAT") and k["name"].startswith("conv2d")]
kt.check(len(flat) >= 3, f"resnet50 b256: {len(flat)} 1x1 convs on flat Hopper tiles")
lin = [k for k in chosen("vgg16", 256) if k["name"].startswith("linear_hopper_wgmma")]
kt.check(len(lin) >= 2, f"vgg16 b256: {len(lin)} linear layers on the Hopper family")
print(f"resnet50 b256 f16: {len(flat)} flat Hopper convs; vgg16 b256 f16: {len(lin)} Hopper linear layers")

kt.finish()
