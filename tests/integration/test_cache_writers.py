"""The kernel cache under many writers, as on a cluster's shared file system: 8 kiln processes
at once generate and compile the same models into one cache directory (each into its own
directory, and then all of them one shared directory with the host compiler, as concurrent
shards of one sweep did); every key is compiled by exactly one of them, every image equals
what a compile without the cache makes, no temporary is left, and `kiln cache verify`
passes. Then corrupt entries: verify names them and exits 1, and a compile drops and
rebuilds them with a warning."""
import glob
import os
import re
import subprocess

import kiln_test as kt

d = kt.tmpdir()
os.environ["XDG_CACHE_HOME"] = os.path.join(d, "cache")
cache = os.path.join(d, "cache", "kiln")
WRITERS = 8
# (model, compiler): NVRTC cubins, and the host compiler's objects linked for the emulator.
MODELS = [("noscope_coral", "nvrtc"), ("noscope_roundabout", "host")]
shared = os.path.join(d, "shared")
kt.kiln("generate", "noscope_roundabout", "--gpu", "h100", "-o", shared)

# Each writer: generate and compile both models into its own directories, then compile the
# shared directory (its emu objects must never be linked or removed by another process).
steps = []
for m, compiler in MODELS:
    out = os.path.join(d, "w$1", m)
    steps += [f'"$0" generate {m} --gpu h100 -o {out}', f'"$0" compile {out} --compiler {compiler} -j 1']
steps.append(f'"$0" compile {shared} --compiler host -j 1')
script = " && ".join(steps)
procs = [subprocess.Popen(["sh", "-c", script, kt.KILN, str(i)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) for i in range(WRITERS)]
results = [(p.wait(), *p.communicate()) for p in procs]
for i, (rc, out, err) in enumerate(results):
    kt.check(rc == 0, f"writer {i}: exit {rc}\n{out}\n{err}")
    kt.check("warning" not in err, f"writer {i} warned: {err}")

# Each key compiled once: per model, the writers' "N compiled" add up to its kernel count.
summary = re.compile(r"compiled (\d+) kernels with (\w+) in [\d.]+ s \((\d+) compiled, (\d+) from the cache")
for m, compiler in MODELS:
    counts = []
    for rc, out, _ in results:
        lines = [s for s in summary.findall(out) if s[1] == compiler]
        if lines:
            counts.append(lines[0])
    kernels = {int(c[0]) for c in counts}
    compiled = sum(int(c[2]) for c in counts)
    kt.check(len(counts) == WRITERS and len(kernels) == 1, f"{m}: summaries {counts}")
    kt.check(compiled == kernels.pop(), f"{m}: {compiled} compiles by {WRITERS} writers: a key was compiled twice "
             f"(or never): {counts}")
    print(f"{m} ({compiler}): {compiled} compiles of its kernels among {WRITERS} writers")
shared_compiles = [summary.findall(out)[-1] for _, out, _ in results]
kt.check(all(s[2] == "0" for s in shared_compiles), f"the shared directory's kernels are the same keys: {shared_compiles}")

# Every writer's cubins equal those of a compile that does not use the cache.
kt.kiln("generate", "noscope_coral", "--gpu", "h100", "-o", os.path.join(d, "lone"))
kt.kiln("compile", os.path.join(d, "lone"), "--no-cache")
lone = {os.path.basename(p): open(p, "rb").read() for p in glob.glob(os.path.join(d, "lone/kernels/*.cubin"))}
kt.check(len(lone) > 0, "no cubins from the lone compile")
for i in range(WRITERS):
    mine = {os.path.basename(p): open(p, "rb").read()
            for p in glob.glob(os.path.join(d, f"w{i}/noscope_coral/kernels/*.cubin"))}
    kt.check(mine == lone, f"writer {i}: its cubins differ from an uncached compile's")
for i in range(WRITERS):
    kt.check(os.path.isfile(os.path.join(d, f"w{i}/noscope_roundabout/emu/kernels.so")), f"writer {i}: no kernels.so")
kt.check(os.path.isfile(os.path.join(shared, "emu/kernels.so")), "the shared directory has no kernels.so")

# Nothing half-written left anywhere: no temporaries, no object directories.
leftovers = [p for p in glob.glob(os.path.join(d, "**"), recursive=True)
             if ".tmp" in os.path.basename(p) or os.path.basename(p).startswith("objects-")]
kt.check(not leftovers, f"left behind: {leftovers}")

out, _ = kt.kiln("cache", "verify")
m = re.search(r"(\d+) entries, (\d+) good, 0 bad", out)
kt.check(m is not None and int(m.group(1)) > 0 and m.group(1) == m.group(2), f"cache verify: {out!r}")
print(out.strip())

# --- corrupt entries: verify names them; reading one drops and rebuilds it, with a warning ------
entries = sorted(glob.glob(os.path.join(cache, "*/*.entry")))
flipped, cut = entries[0], entries[1]
data = bytearray(open(flipped, "rb").read())
data[-1] ^= 0xFF
open(flipped, "wb").write(data)
os.truncate(cut, 12)
out, _ = kt.kiln("cache", "verify", expect=1)
kt.check(f"{flipped}: content hash mismatch" in out and f"{cut}: bad header" in out and "2 bad" in out,
         f"cache verify must name both entries: {out!r}")
# Recompiling the first writer's directories reads every entry again.
warned = ""
for m, compiler in MODELS:
    out, err = kt.kiln("compile", os.path.join(d, "w0", m), "--compiler", compiler)
    for line in err.splitlines():
        kt.check(line.startswith("kiln: warning: cache entry ") and "is corrupt" in line
                 and "rebuilding it" in line, f"unexpected stderr: {line!r}")
    warned += err
kt.check(flipped in warned and cut in warned, f"both corrupt entries must be warned of: {warned!r}")
out, _ = kt.kiln("cache", "verify")
kt.check(" 0 bad" in out, f"after the rebuild: {out!r}")
kt.check(os.path.isfile(flipped) and os.path.isfile(cut), "the corrupt entries were not rebuilt")
kt.finish()
