"""Weight stubs for the committed conformance graphs: strip, then redraw at test time.

A stub is a floating-point initializer with its name, type and shape but no data; its
doc_string carries "kiln-stub mean= std= min= max=" of the exported values. `materialise`
draws each stub from a normal distribution of that mean and std, clipped to [min, max]
(so batchnorm variances stay positive and constant tensors stay constant), seeded by the
model and tensor name: every run and machine sees the same weights, at the scale the
network was initialised with, so activations neither vanish nor explode. Small tensors
(<= KEEP elements: scalars an exporter's patterns compare against, like GELU's sqrt(2))
and integer tensors are kept verbatim."""
import zlib

import numpy as np
import onnx
from onnx import numpy_helper

KEEP = 16
PREFIX = "kiln-stub "
FLOATS = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE,
          onnx.TensorProto.BFLOAT16}


def strip_weights(src, dst):
    """Loads src (external data beside it included) and writes dst with weight stubs."""
    model = onnx.load(src, load_external_data=True)
    for t in model.graph.initializer:
        if t.data_type not in FLOATS:
            continue
        a = numpy_helper.to_array(t).astype(np.float64)
        if a.size <= KEEP:
            continue
        stats = f"mean={a.mean():.9g} std={a.std():.9g} min={a.min():.9g} max={a.max():.9g}"
        dims, name, dtype = list(t.dims), t.name, t.data_type
        t.Clear()
        t.name, t.data_type, t.doc_string = name, dtype, PREFIX + stats
        t.dims.extend(dims)
    onnx.save_model(model, dst)


def _stats(doc):
    return {k: float(v) for k, v in (kv.split("=") for kv in doc[len(PREFIX):].split())}


def materialise(src, dst, seed_name):
    """Writes dst: src with every stub drawn (see the module's comment). Returns dst."""
    model = onnx.load(src)
    for i, t in enumerate(model.graph.initializer):
        if not t.doc_string.startswith(PREFIX):
            continue
        s = _stats(t.doc_string)
        rng = np.random.default_rng(zlib.crc32(f"{seed_name}/{t.name}".encode()))
        a = rng.normal(s["mean"], s["std"], size=tuple(t.dims)) if s["std"] > 0 else \
            np.full(tuple(t.dims), s["mean"])
        a = np.clip(a, s["min"], s["max"])
        dtype = onnx.helper.tensor_dtype_to_np_dtype(t.data_type) \
            if hasattr(onnx.helper, "tensor_dtype_to_np_dtype") else \
            onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[t.data_type]
        filled = numpy_helper.from_array(a.astype(dtype), t.name)
        model.graph.initializer[i].CopyFrom(filled)
    onnx.save_model(model, dst)
    return dst
