# The H100's fit (../h100_2026-11-27c/epilogue_fit.txt: per block and tile, the wgmma clocks at
# 4096 f16 FLOP per clock + 399.4 x swizzle rows of k + 9.2 x output bytes / 128) against the
# lone Hopper pixel tiles this H200 run timed (no cluster, no k-blocks; ping-pong tiles without
# the epilogue term, which they hide): the sweeps' rows and stem_hopper.log's (the stem conv,
# which call 4 timed without a csv). Time = ceil(tiles / 132) tiles per block at 1980 MHz.
# Run here: python3 fit_check.py   (fit_check.txt)
import csv, math, re

pat = re.compile(r"nhwc_t(\d+)x(\d+)_bn(\d+)_s\d+_c(\d)(_pp)?_n(\d+)c(\d+)h(\d+)w(\d+)_o(\d+)"
                 r"k(\d+)x(\d+)s(\d+)x(\d+)p(\d+)x(\d+)")
timed = {}
for f in ["bench_r50_256_sweep.csv", "pp3_sweep.csv", "pp_kb_sweep.csv", "bench_ds_sweep.csv"]:
    for r in csv.DictReader(open(f)):
        if r["check"] == "pass":
            timed.setdefault(r["variant"], float(r["median_ms"]) * 1000)
for line in open("stem_hopper.log"):
    m = re.search(r"(conv2d_hopper\S+): ([\d.]+) ms", line)
    if m:
        timed.setdefault(m.group(1), float(m.group(2)) * 1000)

rows = []
for v, us in sorted(timed.items()):
    m = pat.search(v)
    if not m or "_cl" in v or "_kb" in v:
        continue
    tp, tq, bn, c = (int(m.group(i)) for i in (1, 2, 3, 4))
    pp = m.group(5) is not None
    N, C, H, W, O, KH, KW, SH, SW, PH, PW = (int(m.group(i)) for i in range(6, 17))
    OH, OW = (H + 2 * PH - KH) // SH + 1, (W + 2 * PW - KW) // SW + 1
    swz = 32 if "_w32" in v else 64 if "_w64" in v else 128
    rows_k = KH * KW * C * 2 // swz  # f16; _taps4 folds KW taps into one 128-byte row
    bm = 64 * c
    tiles = N * math.ceil(OH / tp) * math.ceil(OW / tq) * math.ceil(O / bn)
    wgmma = bm * bn * KH * KW * C * 2 / 4096
    clocks = wgmma + 399.4 * rows_k + (0 if pp else 9.2 * bm * bn * 2 / 128)
    fitted = math.ceil(tiles / 132) * clocks / 1980
    rows.append((us / fitted, us, fitted, v))
for q, us, fitted, v in rows:
    print(f"{q:5.2f}  {us:8.1f} us measured  {fitted:8.1f} fitted  {v}")
for what, keep in (("all", lambda v: True), ("alone", lambda v: "_pp_" not in v),
                   ("ping-pong", lambda v: "_pp_" in v)):
    qs = [r[0] for r in rows if keep(r[3])]
    rms = math.sqrt(sum(math.log(q) ** 2 for q in qs) / len(qs))
    print(f"{what}: {len(qs)} tiles, measured / fitted median {sorted(qs)[len(qs) // 2]:.2f}, "
          f"{min(qs):.2f}-{max(qs):.2f}, rms log {rms:.3f}")
