"""bench/mobile_nets.py's step 1, in the child processes it starts: a model built in plain
torch.nn (mobile_models.py), its state_dict saved and its ONNX export written."""
import os
import time


def onnx_export(model, x, path):
    """torch.onnx.export with the TorchScript exporter (batch axis symbolic); returns a note
    when the onnx package is missing and the export went ahead without it."""
    import importlib
    import warnings
    import torch
    note = ""
    try:
        import onnx  # noqa: F401
    except ImportError:
        # The TorchScript exporter imports onnx only in _add_onnxscript_fn, to splice
        # onnxscript custom functions into the proto; with no custom opsets it returns the
        # bytes it was given. Skip it then (these graphs use standard operators only).
        for name in ("torch.onnx._internal.torchscript_exporter.onnx_proto_utils",
                     "torch.onnx._internal.onnx_proto_utils", "torch.onnx._onnx_proto_utils"):
            try:
                mod = importlib.import_module(name)
            except ImportError:
                continue
            if hasattr(mod, "_add_onnxscript_fn"):
                original = mod._add_onnxscript_fn
                mod._add_onnxscript_fn = lambda b, opsets: original(b, opsets) if opsets else b
                note = "onnx package missing: exported without its onnxscript-function pass (none needed)"
                break
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.no_grad():
            torch.onnx.export(model, x, path, dynamo=False, opset_version=17, input_names=["x"],
                              output_names=["logits"], dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}})
    return note


def export_one(name, image, seed, out_dir, threads):
    """The child process of step 1: MODEL.onnx and MODEL.pt (state_dict) in out_dir."""
    import torch
    import mobile_models
    torch.set_num_threads(max(1, threads))
    t = time.time()
    model = mobile_models.build(name, seed=seed, image=image)
    torch.save(model.state_dict(), os.path.join(out_dir, name + ".pt"))
    note = onnx_export(model, torch.randn(1, 3, image, image), os.path.join(out_dir, name + ".onnx"))
    print(f"{name}: built and exported in {time.time() - t:.1f} s{'; ' + note if note else ''}")
