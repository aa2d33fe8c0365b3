#!/usr/bin/env python3
"""Unpacks PyPI wheels into a folder of the build (test-only tools: the SASS disassembler,
onnxruntime as the ONNX reference).
usage: fetch_pypi.py DEST PACKAGE...
Uses PyPI's JSON API and the standard library only (no pip): picks each package's newest
manylinux x86_64 wheel for this interpreter (or a py3 one), checks its sha256, unzips it
into DEST. Dependencies are not fetched (onnxruntime needs only NumPy, which Debian has).
A package already unpacked there (DEST/.fetched/<name>) is skipped. Exits 1 with a message when PyPI cannot be reached;
callers treat the tools as optional."""
import hashlib
import io
import json
import os
import sys
import urllib.parse
import urllib.request
import zipfile

INDEX = "https://pypi.org/pypi"


def wheel_for(name):
    url = f"{INDEX}/{name}/json"
    with urllib.request.urlopen(url, timeout=30) as r:
        meta = json.load(r)
    # A wheel with a CPython extension must match this interpreter (cp311 on Debian 12);
    # tool-only wheels are tagged py3.
    tags = (f"-cp{sys.version_info.major}{sys.version_info.minor}-", "-py3-")
    for f in meta["urls"]:
        n = f["filename"]
        if n.endswith(".whl") and "manylinux" in n and "x86_64" in n and any(t in n for t in tags):
            return dict(f, url=urllib.parse.urljoin(url, f["url"]))  # mirrors answer relative URLs
    raise SystemExit(f"fetch_pypi: {name} has no manylinux x86_64 wheel for this Python")


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    dest = sys.argv[1]
    os.makedirs(os.path.join(dest, ".fetched"), exist_ok=True)
    for name in sys.argv[2:]:
        stamp = os.path.join(dest, ".fetched", name)
        if os.path.exists(stamp):
            continue
        try:
            f = wheel_for(name)
            with urllib.request.urlopen(f["url"], timeout=120) as r:
                data = r.read()
        except OSError as e:
            print(f"fetch_pypi: cannot fetch {name} from PyPI ({e})", file=sys.stderr)
            sys.exit(1)
        if hashlib.sha256(data).hexdigest() != f["digests"]["sha256"]:
            raise SystemExit(f"fetch_pypi: {f['filename']}: sha256 differs from PyPI's")
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            for info in z.infolist():
                path = z.extract(info, dest)
                mode = (info.external_attr >> 16) & 0o777
                if mode:
                    os.chmod(path, mode)
        with open(stamp, "w") as s:
            s.write(f["filename"] + "\n")
        print(f"fetch_pypi: {f['filename']} -> {dest}")


if __name__ == "__main__":
    main()
