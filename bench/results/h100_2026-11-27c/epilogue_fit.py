# What a lone Hopper tile's time is made of, fitted (least squares on relative error) over the
# 88 lone pixel tiles of this folder's and h100_2026-11-27b's sweeps (as tma_rows_bound.py
# reads them): per block and tile, clocks = a x stages + b x (stages x consumers) + m x (the
# stage's wgmma clocks at 4096 f16 FLOP per clock) + e x (the tile's output bytes / 128), and
# the same without the epilogue term or with the TMA rows instead of stages. Run here:
#   python3 epilogue_fit.py layers_ds_sweep.csv bench_ds_sweep.csv \
#     ../h100_2026-11-27b/layers_all_sweep.csv ../h100_2026-11-27b/bench_r50_256_sweep.csv
# (epilogue_fit.txt). Time = ceil(tiles / 132) tiles per block (persistent) at 1980 MHz.
import math, sys
import numpy as np

from tma_rows_bound import lone_tiles

rows = []
for t in lone_tiles(sys.argv[1:]):
    c, bn, swz, stages = t["c"], t["bn"], t["swz"], t["stages"]
    rows.append(dict(v=t["v"], us=t["us"], y=t["us"] * 1e-6 * 1.98e9 / t["waves"], stages=stages, c=c,
                     math=stages * 64 * c * bn * (swz // 2) / 2048, tma_rows=stages * (64 * c + bn),
                     out128=64 * c * bn * 2 / 128))
y = np.array([r["y"] for r in rows])
terms = {
    "stages": lambda r: r["stages"],
    "stages x consumers": lambda r: r["stages"] * r["c"],
    "wgmma clocks": lambda r: r["math"],
    "TMA rows": lambda r: r["tma_rows"],
    "output / 128 B": lambda r: r["out128"],
}
fits = [
    ["stages", "wgmma clocks"],
    ["stages", "wgmma clocks", "output / 128 B"],
    ["stages", "stages x consumers", "wgmma clocks", "output / 128 B"],
    ["TMA rows", "wgmma clocks"],
    ["TMA rows", "wgmma clocks", "output / 128 B"],
]
print(f"{len(rows)} lone pixel tiles; clocks per block and tile fitted as a sum of terms (coefficient: clocks per unit)")
for names in fits:
    X = np.array([[terms[n](r) for n in names] for r in rows])
    coef, *_ = np.linalg.lstsq(X / y[:, None], np.ones(len(y)), rcond=None)
    rel = y / (X @ coef)
    err = math.sqrt(float(np.mean(np.log(rel) ** 2)))
    print("  " + " + ".join(f"{c:.1f} x {n}" for c, n in zip(coef, names)))
    print(f"    measured / fitted: median {np.median(rel):.2f}, {rel.min():.2f}-{rel.max():.2f}, rms log {err:.3f}")
    if names == fits[2]:
        share = np.array([coef[3] * r["out128"] for r in rows]) / (X @ coef)
        best = names, coef, share
# The wgmma term held at the tensor peak (coefficient 1): what is left, per stage and per
# 128 output bytes.
X = np.array([[r["stages"], r["out128"]] for r in rows])
m = np.array([r["math"] for r in rows])
coef2, *_ = np.linalg.lstsq(X / y[:, None], (y - m) / y, rcond=None)
rel = y / (m + X @ coef2)
print(f"  1.0 x wgmma clocks (fixed) + {coef2[0]:.1f} x stages + {coef2[1]:.1f} x output / 128 B")
print(f"    measured / fitted: median {np.median(rel):.2f}, {rel.min():.2f}-{rel.max():.2f}, rms log {math.sqrt(float(np.mean(np.log(rel) ** 2))):.3f}")
names, coef, share = best
print("\nThe epilogue's share of each tile's fitted time under the four-term fit (what ping-pong consumers would hide):")
for i in np.argsort(-share):
    r = rows[i]
    print(f"  {share[i]:5.1%}  {r['us']:8.1f} us  {r['v']}")
