"""Weight stubs for the committed conformance graphs: strip, then redraw at test time.
(Stripping also drops each node's doc string and metadata: the exporter's stack traces.)

A stub is a floating-point initializer with its name, type and shape but no data; its
doc_string carries "kiln-stub mean= std= min= max=" of the exported values. `materialise`
draws each stub seeded by the model and tensor name (every run and machine sees the same
weights): a 4-D one (a conv kernel) at He's scale, sqrt(2 / fan-in), so activations keep
their scale through any depth (torchvision's own init for googlenet, std 0.01, leaves its
output independent of the input, which would test nothing); any other from a normal
distribution of the exported mean and std clipped to [min, max] (batchnorm variances stay
positive, constant tensors constant). Small tensors
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
    for node in model.graph.node:  # the exporter's stack traces: most of a graph's bytes
        node.doc_string = ""
        if hasattr(node, "metadata_props"):
            del node.metadata_props[:]
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
        if len(t.dims) == 4:  # a conv kernel: He's scale, whatever the exporter's init was
            a = rng.normal(0, np.sqrt(2.0 / np.prod(t.dims[1:])), size=tuple(t.dims))
        elif s["std"] > 0:
            a = np.clip(rng.normal(s["mean"], s["std"], size=tuple(t.dims)), s["min"], s["max"])
        else:
            a = np.full(tuple(t.dims), s["mean"])
        dtype = onnx.helper.tensor_dtype_to_np_dtype(t.data_type) \
            if hasattr(onnx.helper, "tensor_dtype_to_np_dtype") else \
            onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[t.data_type]
        filled = numpy_helper.from_array(a.astype(dtype), t.name)
        model.graph.initializer[i].CopyFrom(filled)
    onnx.save_model(model, dst)
    return dst
