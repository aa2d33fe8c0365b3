"""ONNX models built with python3-onnx's helper API (no PyTorch) for kiln's import tests,
and the NumPy (float64) reference of the layers they use."""
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
