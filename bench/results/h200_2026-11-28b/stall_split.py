# Where a Hopper conv's warps wait, from Nsight Compute's source page (--page source --csv
# --print-source sass) of each kernel: the share of all warps' stall samples in the main loop
# (the first run of instructions executed as often as its HGMMAs, within 20%), in the epilogue (after the loop,
# executed as often as the loop's exit), and at the epilogue's cp.async waits (the instruction
# after each DEPBAR.LE SB0). Usage: python3 stall_split.py ncu_3x3_28_source.csv.gz ...
import csv, gzip, sys

for path in sys.argv[1:]:
    rows = list(csv.reader(gzip.open(path, "rt")))
    kernels = []
    for r in rows:
        if r and r[0] == "Kernel Name":
            kernels.append((r[1], []))
        elif r and kernels and r[0] != "Address" and len(r) > 5:
            kernels[-1][1].append((int(r[0], 16), r[1].strip(), int(r[2] or 0), int(r[5] or 0)))
    for name, ins in kernels[:1]:  # each file's kernels are launches of one kernel
        total = sum(s for _, _, s, _ in ins)
        loop_exec = max(e for _, src, _, e in ins if src.startswith("HGMMA"))
        # The loop's body: the first run of such instructions (the try-wait retries the
        # compiler moves past the kernel's end run as often, and are not in it).
        first = next(i for i, x in enumerate(ins) if x[3] >= 0.8 * loop_exec)
        last = first
        while last + 1 < len(ins) and ins[last + 1][3] >= 0.8 * loop_exec:
            last += 1
        in_loop = range(first, last + 1)
        exit_exec = ins[last + 1][3]
        loop = sum(ins[i][2] for i in in_loop)
        epi = [i for i in range(last + 1, len(ins)) if ins[i][3] == exit_exec]
        epilogue = sum(ins[i][2] for i in epi)
        waits = sum(ins[i][2] for i in epi if ins[i - 1][1].startswith("DEPBAR.LE SB0"))
        print(f"{name[:100]}: {total} samples; main loop {100 * loop / total:.1f}%, epilogue "
              f"{100 * epilogue / total:.1f}%, its cp.async waits {100 * waits / total:.1f}%")
