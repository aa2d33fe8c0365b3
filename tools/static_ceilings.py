#!/usr/bin/env python3
"""Per-layer static ceilings of a generated model's tensor-core kernels, from its manifest.

Usage: tools/static_ceilings.py GENERATED_DIR [--all]

Prints, for each chosen kernel that describes a main loop (the mma.sync implicit GEMM and
the Hopper family's wgmma), the layers it serves, its tile, each ceiling the cost model
derived (fractions of the math peak: math, dram, l2, smem, issue, latency;
generator/cost/main_loop.hpp), the binding one, and at the end the FLOP-weighted static
ceiling of the chosen convolutions: sum(flops * min(ceilings)) / sum(flops), each launch
counted once per node it serves, and the same without the DRAM floor (the kernels' own
limits; a layer's bytes per FLOP are its own). --all adds the other kernels.
"""
import json
import sys


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 1:
        sys.exit(__doc__)
    with open(f"{args[0]}/manifest.json") as f:
        m = json.load(f)
    print(f"{m['model']} {m['dtype']} on {m['gpu']['name']}")
    print(f"{'tile':>16} {'math':>5} {'dram':>5} {'l2':>5} {'smem':>5} {'issue':>5} {'lat':>5} "
          f"{'ceil':>5} {'limiter':>8} {'GFLOP':>7}  layers")
    weighted = weighted_loop = total = 0.0
    families = {}
    for k in m["kernels"]:
        if not k.get("chosen") or "ceilings" not in k:
            continue
        conv = "implicit_gemm" in k["family"] or "wgmma" in k["family"]
        hopper = "wgmma" in k["family"]
        if not conv and "--all" not in sys.argv:
            continue
        c = k["ceilings"]
        ceil = min(c.values())
        p = k["params"]
        tile = (f"t{p['TP']}x{p['TQ']}bn{p['BN']}c{p['CONSUMERS']}"
                + (f"cl{p['CLUSTER']}" if "CLUSTER" in p else "") if hopper
                else f"{p['BM']}x{p['BN']}w{p['BM'] // p['WM']}x{p['BN'] // p['WN']}" if conv
                else k["family"][:16])
        launches = len(k["nodes"])
        flops = k.get("flops", 0) * launches
        if conv:
            weighted += flops * ceil
            weighted_loop += flops * min(v for n, v in c.items() if n != "dram")
            total += flops
            families[k["family"]] = families.get(k["family"], 0) + flops
        layers = ", ".join(n.split(" ")[0].split("+")[0] for n in k["nodes"])
        print(f"{tile:>16} {c['math']:5.2f} {c['dram']:5.2f} {c.get('l2', 1):5.2f} "
              f"{c['smem']:5.2f} {c['issue']:5.2f} "
              f"{c['latency']:5.2f} {ceil:5.2f} {k['limiter']:>8} {flops / 1e9:7.1f}  {layers}")
    if total:
        print(f"FLOP-weighted static ceiling of the chosen tensor-core kernels: "
              f"{weighted / total:.3f} of peak over {total / 1e9:.1f} GFLOP; without the DRAM "
              f"floor: {weighted_loop / total:.3f}")


if __name__ == "__main__":
    main()
