"""ONNX models built with python3-onnx's helper API (no PyTorch) for kiln's import tests,
and the NumPy (float64) reference of the layers they use."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def init(name, a, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(a, dtype), name)


def model(nodes, inits, inp, out, opset, name="g", input_shape=("N", 3, 12, 12), output_shape=("N", "K")):
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info(inp, TensorProto.FLOAT, list(input_shape))],
                          [helper.make_tensor_value_info(out, TensorProto.FLOAT, list(output_shape))],
                          initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


# ---- NumPy reference ------------------------------------------------------------------

def conv(x, w, b=None, stride=(1, 1), pads=(0, 0, 0, 0), dil=(1, 1), group=1):
    """ONNX Conv: pads are (top, left, bottom, right)."""
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (h + pads[0] + pads[2] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + pads[1] + pads[3] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    y = np.zeros((n, m, oh, ow))
    mg = m // group
    for g in range(group):
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, g * cg:(g + 1) * cg, i * dil[0]:i * dil[0] + stride[0] * (oh - 1) + 1:stride[0],
                           j * dil[1]:j * dil[1] + stride[1] * (ow - 1) + 1:stride[1]]
                y[:, g * mg:(g + 1) * mg] += np.einsum("nchw,mc->nmhw", patch, w[g * mg:(g + 1) * mg, :, i, j])
    if b is not None:
        y += b[None, :, None, None]
    return y


def windows(x, k, s, pads, fill):
    """The pooling windows of x (pads top, left, bottom, right), padded with `fill`:
    an array [n, c, oh, ow, k*k]."""
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])), constant_values=fill)
    oh = (xp.shape[2] - k) // s + 1
    ow = (xp.shape[3] - k) // s + 1
    return np.stack([xp[:, :, i:i + s * (oh - 1) + 1:s, j:j + s * (ow - 1) + 1:s]
                     for i in range(k) for j in range(k)], axis=-1)


def maxpool(x, k, s, pads=(0, 0, 0, 0)):
    return windows(x, k, s, pads, -np.inf).max(-1)


def avgpool(x, k, s, pads=(0, 0, 0, 0), count_include_pad=False):
    total = windows(x, k, s, pads, 0.0).sum(-1)
    if count_include_pad:
        return total / (k * k)
    return total / windows(np.ones_like(x), k, s, pads, 0.0).sum(-1)


def batchnorm(x, scale, bias, mean, var, eps=1e-5):
    r = lambda v: v[None, :, None, None]
    return (x - r(mean)) / np.sqrt(r(var) + eps) * r(scale) + r(bias)


def softmax(x):
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def relu(x):
    return np.maximum(x, 0)


def conv_transpose(x, w, b=None, stride=(1, 1), pads=(0, 0, 0, 0), out_pad=(0, 0), dil=(1, 1), group=1):
    """ONNX ConvTranspose: every input pixel scatters its kernel into the full output, which
    pads (top, left, bottom, right) then crop."""
    n, c, h, wd = x.shape
    _, mg, kh, kw = w.shape
    cg = c // group
    fh = (h - 1) * stride[0] + (kh - 1) * dil[0] + 1 + out_pad[0]
    fw = (wd - 1) * stride[1] + (kw - 1) * dil[1] + 1 + out_pad[1]
    full = np.zeros((n, mg * group, fh, fw))
    for g in range(group):
        for i in range(kh):
            for j in range(kw):
                full[:, g * mg:(g + 1) * mg, i * dil[0]:i * dil[0] + stride[0] * (h - 1) + 1:stride[0],
                     j * dil[1]:j * dil[1] + stride[1] * (wd - 1) + 1:stride[1]] += \
                    np.einsum("nchw,cm->nmhw", x[:, g * cg:(g + 1) * cg], w[g * cg:(g + 1) * cg, :, i, j])
    y = full[:, :, pads[0]:fh - pads[2], pads[1]:fw - pads[3]]
    if b is not None:
        y = y + b[None, :, None, None]
    return y


def resize_taps(out, inp, scale, mode, coord, nearest, length):
    """One axis of ONNX Resize: per output index, two source indices and their weights. The
    source coordinate is computed in float32, as ONNX Runtime does."""
    f = np.float32
    taps = []
    for o in range(out):
        if coord == "asymmetric":
            src = f(o) / f(scale)
        elif coord == "half_pixel":
            src = (f(o) + f(0.5)) / f(scale) - f(0.5)
        elif coord == "pytorch_half_pixel":
            src = (f(o) + f(0.5)) / f(scale) - f(0.5) if out > 1 else f(0)
        else:  # align_corners
            # ONNX: the resized length is in * the given scale, not rounded
            src = f(0) if length == 1 else f(o) * f(inp - 1) / (f(length) - f(1))
        if mode == "nearest":
            fl = np.floor(src)
            i = {"floor": fl, "ceil": np.ceil(src), "round_prefer_floor": fl if src - fl <= 0.5 else fl + 1,
                 "round_prefer_ceil": fl if src - fl < 0.5 else fl + 1}[nearest]
            i = int(min(max(i, 0), inp - 1))
            taps.append((i, i, 1.0, 0.0))
        else:
            c = min(max(float(src), 0.0), inp - 1.0)
            i0 = min(int(c), inp - 1)
            i1 = min(i0 + 1, inp - 1)
            taps.append((i0, i1, 1.0 - (c - i0), c - i0))
    return taps


def resize(x, size, scales=None, mode="nearest", coord="half_pixel", nearest="round_prefer_floor"):
    """ONNX Resize over H, W to `size`; the coordinate scale is `scales` where given, else
    size / input."""
    h, w = x.shape[2:]
    sc = scales or (size[0] / h, size[1] / w)
    length = (np.float32(h) * np.float32(sc[0]), np.float32(w) * np.float32(sc[1])) if scales else size
    th = resize_taps(size[0], h, sc[0], mode, coord, nearest, length[0])
    tw = resize_taps(size[1], w, sc[1], mode, coord, nearest, length[1])
    rows = np.stack([a * x[:, :, i] + b * x[:, :, j] for i, j, a, b in th], axis=2)
    return np.stack([a * rows[:, :, :, i] + b * rows[:, :, :, j] for i, j, a, b in tw], axis=3)


def onnxruntime_or_skip(ort_dir):
    """onnxruntime from ort_dir (where `make tools` fetches it), or exit 77 (the test is
    skipped) without it there."""
    sys.path.insert(0, ort_dir)
    try:
        import onnxruntime
    except ImportError as e:
        print(f"skipped: onnxruntime not in {ort_dir} ({e}); `make tools` fetches it")
        sys.exit(77)
    return onnxruntime
