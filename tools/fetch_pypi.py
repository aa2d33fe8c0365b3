#!/usr/bin/env python3
"""Unpacks PyPI wheels into a folder of the build (test-only tools: the SASS disassembler).
usage: fetch_pypi.py DEST PACKAGE...
Uses PyPI's JSON API and the standard library only (no pip): picks each package's newest
manylinux x86_64 wheel, checks its sha256, unzips it into DEST. A package already unpacked
there (DEST/.fetched/<name>) is skipped. Exits 1 with a message when PyPI cannot be reached;
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
    for f in meta["urls"]:
        if f["filename"].endswith(".whl") and "manylinux" in f["filename"] and "x86_64" in f["filename"]:
            return dict(f, url=urllib.parse.urljoin(url, f["url"]))  # mirrors answer relative URLs
    raise SystemExit(f"fetch_pypi: {name} has no manylinux x86_64 wheel")


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
