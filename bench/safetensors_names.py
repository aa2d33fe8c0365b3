"""The tensor names in a .safetensors file (its JSON header), without the safetensors
package."""
import json
import struct


def names(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    return {k for k in header if k != "__metadata__"}
