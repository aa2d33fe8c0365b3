"""A small CNN using every op, run by `kiln run --device cpu` and by an independent NumPy
implementation of the same network and weights (float64): outputs agree within 1e-5."""
import json
import math
import os

import numpy as np

import kiln_test as kt

MODEL = {
    "format": "kiln-model/1", "name": "every_op",
    "input": {"name": "image", "shape": [3, 3, 13, 11]},
    "layers": [
        {"name": "c1", "op": "conv2d", "out_channels": 6, "kernel": 3, "padding": 1},
        {"name": "bn1", "op": "batchnorm", "eps": 1e-3},
        {"name": "r1", "op": "relu"},
        {"name": "c2", "op": "conv2d", "out_channels": 6, "kernel": [3, 2], "stride": [2, 1],
         "padding": [1, 1], "dilation": [1, 2], "groups": 3, "bias": False},
        {"name": "mp", "op": "maxpool2d", "kernel": 3, "stride": 2, "padding": 1, "ceil_mode": True,
         "inputs": ["r1"]},
        {"name": "up", "op": "upsample2d", "scale": 2, "inputs": ["mp"]},
        {"name": "ap", "op": "avgpool2d", "kernel": 2, "stride": 2, "inputs": ["up"]},
        {"name": "add", "op": "add", "inputs": ["ap", "mp"]},
        {"name": "cat", "op": "concat", "inputs": ["add", "mp"]},
        {"name": "ap2", "op": "avgpool2d", "kernel": 3, "stride": 2, "padding": 1, "ceil_mode": True,
         "count_include_pad": False},
        {"name": "hs", "op": "hardswish", "inputs": ["c2"]},
        {"name": "r6", "op": "clip", "min": 0, "max": 6, "inputs": ["c2"]},
        # parameters exact in f32, as kernels and the reference hold them (f64 runs to 1e-12)
        {"name": "hsg", "op": "hardsigmoid", "alpha": 0.25, "beta": 0.375, "inputs": ["c2"]},
        {"name": "sg", "op": "sigmoid", "inputs": ["c2"]},
        {"name": "si", "op": "silu", "inputs": ["c2"]},
        {"name": "ge", "op": "gelu", "inputs": ["c2"]},
        {"name": "gt", "op": "gelu_tanh", "inputs": ["c2"]},
        {"name": "acts", "op": "concat", "inputs": ["hs", "r6", "hsg", "sg", "si", "ge", "gt"]},
        {"name": "aap", "op": "adaptive_avgpool2d", "output_size": [3, 2], "inputs": ["acts"]},
        {"name": "gap", "op": "global_avgpool", "inputs": ["ap2"]},
        {"name": "f1", "op": "flatten", "inputs": ["aap"]},
        {"name": "f2", "op": "flatten", "inputs": ["gap"]},
        {"name": "cat2", "op": "concat", "inputs": ["f1", "f2"]},
        {"name": "fc", "op": "linear", "out_features": 7},
        {"name": "prob", "op": "softmax"},
    ],
}


def conv2d(x, w, b, stride, pad, dil, groups):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    oh = (h + 2 * pad[0] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * pad[1] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    y = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, g * cg:(g + 1) * cg,
                           i * dil[0]: i * dil[0] + stride[0] * (oh - 1) + 1: stride[0],
                           j * dil[1]: j * dil[1] + stride[1] * (ow - 1) + 1: stride[1]]
                y[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, w[g * og:(g + 1) * og, :, i, j])
    if b is not None:
        y += b[None, :, None, None]
    return y


def pool_out(size, k, s, p, ceil):
    span = size + 2 * p - k
    out = (-(-span // s) if ceil else span // s) + 1
    if ceil and (out - 1) * s >= size + p:
        out -= 1
    return out


def pool(x, k, s, p, ceil, kind, include_pad=True):
    n, c, h, w = x.shape
    oh, ow = pool_out(h, k, s, p, ceil), pool_out(w, k, s, p, ceil)
    y = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * s - p, j * s - p
            h1, w1 = min(h0 + k, h + p), min(w0 + k, w + p)
            area = (h1 - h0) * (w1 - w0)
            h0c, w0c, h1c, w1c = max(h0, 0), max(w0, 0), min(h1, h), min(w1, w)
            win = x[:, :, h0c:h1c, w0c:w1c]
            if kind == "max":
                y[:, :, i, j] = win.max(axis=(2, 3))
            else:
                div = area if include_pad else (h1c - h0c) * (w1c - w0c)
                y[:, :, i, j] = win.sum(axis=(2, 3)) / div
    return y


def adaptive(x, oh, ow):
    n, c, h, w = x.shape
    y = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            h0, h1 = (i * h) // oh, -(-((i + 1) * h) // oh)
            w0, w1 = (j * w) // ow, -(-((j + 1) * w) // ow)
            y[:, :, i, j] = x[:, :, h0:h1, w0:w1].mean(axis=(2, 3))
    return y


def reference(x, p):
    c1 = conv2d(x, p["c1.weight"], p["c1.bias"], (1, 1), (1, 1), (1, 1), 1)
    bn = lambda v, n, eps: ((v - p[n + ".running_mean"][None, :, None, None])
                            / np.sqrt(p[n + ".running_var"][None, :, None, None] + eps)
                            * p[n + ".weight"][None, :, None, None] + p[n + ".bias"][None, :, None, None])
    r1 = np.maximum(bn(c1, "bn1", 1e-3), 0)
    c2 = conv2d(r1, p["c2.weight"], None, (2, 1), (1, 1), (1, 2), 3)
    mp = pool(r1, 3, 2, 1, True, "max")
    up = mp.repeat(2, axis=2).repeat(2, axis=3)
    ap = pool(up, 2, 2, 0, False, "avg")
    add = ap + mp
    cat = np.concatenate([add, mp], axis=1)
    ap2 = pool(cat, 3, 2, 1, True, "avg", include_pad=False)
    hs = c2 * np.clip(c2 + 3, 0, 6) / 6
    sig = 1 / (1 + np.exp(-c2))
    gelu = c2 / 2 * (1 + np.vectorize(math.erf)(c2 / math.sqrt(2)))
    gelu_tanh = c2 / 2 * (1 + np.tanh(math.sqrt(2 / math.pi) * (c2 + 0.044715 * c2 ** 3)))
    acts = np.concatenate([hs, np.clip(c2, 0, 6), np.clip(0.25 * c2 + 0.375, 0, 1), sig, c2 * sig, gelu,
                           gelu_tanh], axis=1)
    aap = adaptive(acts, 3, 2)
    gap = ap2.mean(axis=(2, 3), keepdims=True)
    feat = np.concatenate([aap.reshape(len(x), -1), gap.reshape(len(x), -1)], axis=1)
    fc = feat @ p["fc.weight"].T + p["fc.bias"]
    e = np.exp(fc - fc.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True), fc


def main():
    d = kt.tmpdir()
    rng = np.random.RandomState(3)
    with open(os.path.join(d, "m.json"), "w") as f:
        json.dump(MODEL, f)
    p = {
        "c1.weight": rng.randn(6, 3, 3, 3) * 0.4, "c1.bias": rng.randn(6) * 0.1,
        "bn1.weight": rng.uniform(0.5, 1.5, 6), "bn1.bias": rng.randn(6) * 0.1,
        "bn1.running_mean": rng.randn(6) * 0.1, "bn1.running_var": rng.uniform(0.5, 1.5, 6),
        "bn1.num_batches_tracked": np.array(5.0),  # PyTorch bookkeeping: ignored
        "c2.weight": rng.randn(6, 2, 3, 2) * 0.4,
        "fc.weight": rng.randn(7, 7 * 6 * 3 * 2 + 12) * 0.3, "fc.bias": rng.randn(7) * 0.1,
    }
    p32 = {k: v.astype(np.float32) for k, v in p.items()}
    kt.write_safetensors(os.path.join(d, "w.safetensors"), p32)
    x = rng.randn(3, 3, 13, 11).astype(np.float32)
    np.save(os.path.join(d, "x.npy"), x)

    probs, logits = reference(x.astype(np.float64), {k: v.astype(np.float64) for k, v in p32.items()})
    # The same network without its softmax exposes the logits.
    with open(os.path.join(d, "logits.json"), "w") as f:
        json.dump(dict(MODEL, layers=MODEL["layers"][:-1]), f)
    for model, want in (("m.json", probs), ("logits.json", logits)):
        for dtype, tol in (("f32", 1e-5), ("f64", 1e-12)):
            out = os.path.join(d, f"y_{dtype}.npy")
            kt.kiln("run", os.path.join(d, model), "--device", "cpu", "--dtype", dtype,
                    "--weights", os.path.join(d, "w.safetensors"), "--input", os.path.join(d, "x.npy"),
                    "--output", out)
            got = np.load(out)
            kt.check(got.shape == want.shape, f"{dtype}: shape {got.shape} != {want.shape}")
            rel = np.linalg.norm(got - want) / np.linalg.norm(want)
            print(f"{model} {dtype}: relative error {rel:.3g} (tolerance {tol})")
            kt.check(rel < tol, f"{model} {dtype}: relative error {rel} >= {tol}")

    # Training: the loss printed is softmax cross-entropy of the logits.
    t = np.array([1, 4, 6], dtype=np.int64)
    np.save(os.path.join(d, "t.npy"), t)
    out, _ = kt.kiln("run", os.path.join(d, "m.json"), "--device", "cpu", "--dtype", "f64",
                     "--weights", os.path.join(d, "w.safetensors"), "--input", os.path.join(d, "x.npy"),
                     "--train", "--target", os.path.join(d, "t.npy"), "--grads", os.path.join(d, "g.safetensors"))
    # Training uses batch statistics in batchnorm, so only the format and the names are checked here.
    g = kt.read_safetensors(os.path.join(d, "g.safetensors"))
    trained = sorted(k for k in p if not k.endswith(("running_mean", "running_var", "num_batches_tracked")))
    kt.check(sorted(g) == trained, f"gradient names {sorted(g)} != {trained}")
    kt.check("loss" in out, f"no loss printed: {out}")
    kt.finish()


main()
