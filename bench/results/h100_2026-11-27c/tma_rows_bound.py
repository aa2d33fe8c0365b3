# Lone Hopper pixel tiles (conv2d_hopper_wgmma, no cluster, not flat) of the sweeps named on the
# command line, against a bound of R clocks per TMA box row (A's 64 * consumers rows plus B's BN
# rows per stage, each stage one swizzle row of k) and against one of S clocks per stage beyond
# its wgmmas: python3 tma_rows_bound.py [R] [S] SWEEP.csv ...   (tma_rows_bound.txt: R 3, S 400
# over this folder's layers_ds_sweep.csv and bench_ds_sweep.csv and h100_2026-11-27b's
# layers_all_sweep.csv and bench_r50_256_sweep.csv). Time = ceil(tiles / 132) waves x stages x
# per-stage clocks at 1980 MHz (the persistent grid of one block per SM).
import csv, math, re, statistics, sys

pat = re.compile(r"nhwc_t(\d+)x(\d+)_bn(\d+)_s\d+_c(\d)_n(\d+)c(\d+)h(\d+)w(\d+)_o(\d+)k(\d+)x(\d+)s(\d+)x(\d+)p(\d+)x(\d+)")


def lone_tiles(files):
    """The lone pixel tiles (no cluster, not flat) that passed their check in these sweeps: per
    row the variant, its measured microseconds, its tile (tp, tq, bn, consumers), stages (of its
    swizzle row), tiles per block (ceil(tiles / 132)) and swizzle (also epilogue_fit.py's)."""
    out = []
    for f in files:
        for r in csv.DictReader(open(f)):
            v = r["variant"]
            m = pat.search(v)
            if not m or r["family"] != "conv2d_hopper_wgmma" or "_cl" in v or r["check"] != "pass":
                continue
            tp, tq, bn, c, N, C, H, W, O, KH, KW, SH, SW, PH, PW = map(int, m.groups())
            OH, OW = (H + 2 * PH - KH) // SH + 1, (W + 2 * PW - KW) // SW + 1
            swz = 32 if "_w32" in v else 64 if "_w64" in v else 128
            tiles = N * math.ceil(OH / tp) * math.ceil(OW / tq) * math.ceil(O / bn)
            out.append(dict(v=v, us=float(r["median_ms"]) * 1000, tp=tp, tq=tq, bn=bn, c=c,
                            stages=KH * KW * C // (swz // 2), waves=math.ceil(tiles / 132), swz=swz))
    return out


if __name__ == "__main__":
    R, S, files = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]
    rows = []
    for t in lone_tiles(files):
        c, bn, swz = t["c"], t["bn"], t["swz"]
        math_clk = 64 * c * bn * (swz // 2) / 2048 / (1 if c == 2 else 0.875)
        us = lambda clk: t["waves"] * t["stages"] * clk / 1980.0
        rows.append((t["us"] / us(R * (64 * c + bn)), t["us"] / us(S + math_clk), t["us"], t["v"]))
    for a, b, meas, v in sorted(rows):
        print(f"{a:5.2f} {b:5.2f} {meas:8.1f} us  {v}")
    print(f"{len(rows)} tiles; measured over the row bound: median {statistics.median(r[0] for r in rows):.2f}, "
          f"min {min(r[0] for r in rows):.2f}; over the stage bound: median {statistics.median(r[1] for r in rows):.2f}, "
          f"min {min(r[1] for r in rows):.2f}")
