"""kiln tune loses nothing when it is killed or stopped, and shards run at once never clobber
each other: a sweep killed with SIGKILL part way leaves a valid database of what it finished,
and the same command run again completes it to exactly the database of an uninterrupted
sweep; SIGTERM (Slurm's preemption signal) finishes the item under way, saves, says so and
exits 143, and so does kiln bench, its sweep.csv holding what it measured; three shards started at once without -o (each its own sweep directory), or
adding to one database, merge to the full sweep; a second sweep into a directory in use is
refused; --dry-run counts the work. No sleeps: the test follows the sweep's log lines."""
import json
import os
import re
import signal
import subprocess

import kiln_test as kt

d = kt.tmpdir()
path = lambda n: os.path.join(d, n)
os.environ["XDG_CACHE_HOME"] = path("cache")
MODEL = {"format": "kiln-model/1", "name": "conv_pool_fc", "input": {"name": "x", "shape": [2, 16, 32, 32]},
         "layers": [{"name": "conv", "op": "conv2d", "out_channels": 16, "kernel": 3, "padding": 1},
                    {"name": "relu", "op": "relu"},
                    {"name": "pool", "op": "maxpool2d", "kernel": 2},
                    {"name": "flatten", "op": "flatten"},
                    {"name": "fc", "op": "linear", "out_features": 8}]}
json.dump(MODEL, open(path("model.json"), "w"))
TUNE = ["tune", path("model.json"), "--device", "emu", "--gpu", "h100"]
ITEM = re.compile(r"kiln: tune (\d+)/(\d+) ")


def load(name):
    return json.load(open(path(name)))


def start(*extra):
    return subprocess.Popen([kt.KILN, *TUNE, *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def read_items(p, k):
    """Reads p's stderr up to its k-th item line (each printed once the item is saved)."""
    lines = []
    for line in p.stderr:
        if ITEM.match(line):
            lines.append(line)
            if len(lines) == k:
                break
    return lines


# --- the uninterrupted sweep, and a rerun that finds everything measured ----------------------
out, err = kt.kiln(*TUNE, "--db", path("full.json"))
full = load("full.json")
n = len(full["measurements"])
# (8 on 2026-11-26: the ceiling-priced model leaves fewer valid implicit-GEMM tiles)
kt.check(n >= 6, f"the model should give half a dozen items or more, not {n}")
kt.check(len(ITEM.findall(err)) == n, f"one log line per item expected: {err!r}")
out, err = kt.kiln(*TUNE, "--db", path("full.json"))
kt.check(f"0 checked variants recorded without timings (emu), {n} measured before and skipped" in out, out)
kt.check(not ITEM.search(err), f"a finished sweep's rerun measured again: {err!r}")
kt.check(load("full.json") == full, "a rerun changed the database")
out, _ = kt.kiln(*TUNE, "--db", path("full.json"), "--shard", "1/3", "--dry-run")
kt.check(f"{n} work items" in out and f"shard 1/3 holds {len(range(1, n, 3))}" in out
         and "0 to measure" in out, f"dry run: {out!r}")

# --- SIGKILL part way: a valid database of what finished; the rerun completes it -------------
p = start("--db", path("killed.json"))
done = read_items(p, 2)
p.kill()
p.wait()
kt.check(len(done) == 2, f"the sweep ended before its second item: {done}")
killed = load("killed.json")  # valid JSON: written whole, renamed into place
kt.kiln("tune", "report", path("killed.json"))  # and a valid database
have = {m["variant"] for m in killed["measurements"]}
kt.check(2 <= len(have) < n, f"killed after 2 items, the database holds {len(have)} of {n}")
kt.check(all(m in full["measurements"] for m in killed["measurements"]), "the killed sweep saved a wrong measurement")
out, err = kt.kiln(*TUNE, "--db", path("killed.json"))
kt.check(f"{len(have)} measured before and skipped" in out, f"the rerun must skip what was saved: {out!r}")
kt.check(len(ITEM.findall(err)) == n - len(have), f"the rerun measured {len(ITEM.findall(err))} items")
kt.check(load("killed.json") == full, "killed + rerun differs from the uninterrupted sweep")
print(f"SIGKILL after 2 of {n} items: {len(have)} saved; the rerun measured {n - len(have)}")

# --- SIGTERM: the item under way finishes and is saved, a message, exit 143 -------------------
p = start("--db", path("term.json"))
read_items(p, 1)
p.send_signal(signal.SIGTERM)
rest = p.stderr.read()
p.wait()
kt.check(p.returncode == 128 + signal.SIGTERM, f"SIGTERM: exit {p.returncode}, expected 143: {rest!r}")
saved = load("term.json")["measurements"]
logged = 1 + len(ITEM.findall(rest))
kt.check(len(saved) == logged < n, f"SIGTERM: {len(saved)} saved, {logged} logged, {n} in all")
kt.check(re.search(rf"kiln: stopped: Terminated after {logged} of {n} items .* saved in .*term\.json; "
                   rf"run the same command again to measure the other {n - logged}", rest),
         f"SIGTERM message: {rest!r}")
kt.kiln(*TUNE, "--db", path("term.json"))
kt.check(load("term.json") == full, "stopped + rerun differs from the uninterrupted sweep")

# --- kiln bench on SIGTERM: the item under way finishes, sweep.csv holds what was measured -----
BITEM = re.compile(r"kiln: bench (\d+)/(\d+) ")
p = subprocess.Popen([kt.KILN, "bench", path("model.json"), "--device", "emu", "--gpu", "h100", "-o",
                      path("bench_term")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
for line in p.stderr:
    if BITEM.match(line):
        break
p.send_signal(signal.SIGTERM)
rest = p.stderr.read()
p.wait()
logged = 1 + len(BITEM.findall(rest))
kt.check(p.returncode == 128 + signal.SIGTERM, f"bench SIGTERM: exit {p.returncode}, expected 143: {rest!r}")
rows = open(path("bench_term/sweep.csv")).read().splitlines()[1:] if os.path.exists(path("bench_term/sweep.csv")) else []
kt.check(len(rows) == logged < n, f"bench SIGTERM: {len(rows)} rows in sweep.csv, {logged} logged, {n} in all")
kt.check(re.search(rf"kiln: stopped: Terminated after {logged} of {n} items; sweep.csv and report.html hold them",
                   rest), f"bench SIGTERM message: {rest!r}")
kt.check(os.path.exists(path("bench_term/report.html")), "bench SIGTERM: no report.html")

# --- three shards at once, without -o: separate sweep directories, one shared kernel cache ----
def shards(db_of):
    procs = [start("--shard", f"{i}/3", "--db", path(db_of(i))) for i in range(3)]
    for i, p in enumerate(procs):
        out, err = p.communicate()
        kt.check(p.returncode == 0, f"shard {i}/3: exit {p.returncode}\n{out}\n{err}")


shards(lambda i: f"s{i}.json")
kt.kiln("tune", "merge", path("s0.json"), path("s1.json"), path("s2.json"), "-o", path("merged.json"))
kt.check(load("merged.json") == full, "concurrent shards do not merge to the full sweep")
sweeps = os.listdir(path("cache/kiln/sweeps"))
kt.check(len(sweeps) >= 4, f"each shard needs its own default sweep directory: {sweeps}")
# All three adding to one database at once: none loses another's measurements.
shards(lambda i: "shared.json")
kt.check(load("shared.json") == full, "shards sharing one database lost measurements")

# --- a second sweep into a directory in use is refused, the first carries on -----------------
p = start("--db", path("busy.json"), "-o", path("busy"))
read_items(p, 1)
p.send_signal(signal.SIGSTOP)  # holds its directory's lock while stopped
kt.expect_error([*TUNE, "--db", path("other.json"), "-o", path("busy")], path("busy"),
                "another kiln tune is sweeping in this directory")
p.send_signal(signal.SIGCONT)
p.communicate()
kt.check(p.returncode == 0 and load("busy.json") == full, f"the first sweep: exit {p.returncode}")
kt.finish()
