#!/usr/bin/env python3
"""A small synthetic image classification task for kiln train (seeded, NumPy only).

Each image is uniform noise with a red square patch and a green one (a distractor) placed at
random; the class is the quadrant of the image the red patch lies in (0 top left, 1 top right,
2 bottom left, 3 bottom right; --classes 2: top or bottom half). A network must find the red
patch by its colour and report where it is: a task a small CNN learns in a few epochs.

    make_patch_task.py OUT_DIR [--train 512] [--val 256] [--size 16] [--classes 4] [--seed 0]

writes OUT_DIR/x_train.npy (float32 [N, 3, S, S]), y_train.npy (int64 [N]), x_val.npy and
y_val.npy. The same arguments give the same bytes.
"""
import argparse
import os

import numpy as np


def make(n, size, classes, patch, rng):
    x = rng.uniform(0.0, 0.4, size=(n, 3, size, size)).astype(np.float32)
    y = rng.integers(0, classes, size=n).astype(np.int64)
    half = size // 2
    for i in range(n):
        # The red patch inside the class's region (quadrant, or half for 2 classes).
        rows = (0, half) if (y[i] // 2 if classes == 4 else y[i]) == 0 else (half, size)
        cols = (0, size) if classes == 2 else ((0, half) if y[i] % 2 == 0 else (half, size))
        r = rng.integers(rows[0], rows[1] - patch + 1)
        c = rng.integers(cols[0], cols[1] - patch + 1)
        x[i, :, r:r + patch, c:c + patch] = np.array([1.0, 0.1, 0.1], np.float32)[:, None, None]
        # A green distractor anywhere (it may overlap the red one; red is drawn on top).
        gr, gc = rng.integers(0, size - patch + 1, size=2)
        x[i, :, gr:gr + patch, gc:gc + patch] = np.array([0.1, 1.0, 0.1], np.float32)[:, None, None]
        x[i, :, r:r + patch, c:c + patch] = np.array([1.0, 0.1, 0.1], np.float32)[:, None, None]
    return x, y


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out_dir")
    p.add_argument("--train", type=int, default=512)
    p.add_argument("--val", type=int, default=256)
    p.add_argument("--size", type=int, default=16, help="image height and width")
    p.add_argument("--classes", type=int, default=4, choices=(2, 4))
    p.add_argument("--patch", type=int, default=3, help="patch side")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    if a.size < 2 * a.patch:
        p.error("--size must be at least twice --patch")
    rng = np.random.default_rng(a.seed)
    os.makedirs(a.out_dir, exist_ok=True)
    for split, n in (("train", a.train), ("val", a.val)):
        x, y = make(n, a.size, a.classes, a.patch, rng)
        np.save(os.path.join(a.out_dir, f"x_{split}.npy"), x)
        np.save(os.path.join(a.out_dir, f"y_{split}.npy"), y)


if __name__ == "__main__":
    main()
