#!/usr/bin/env python3
"""Compiles not_emulated.cpp once per case; each must fail naming what is not emulated.

usage: check_not_emulated.py SOURCE INCLUDE_DIR... -- COMPILER [FLAGS...]
"""
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

CASES = {
    "shfl_up": "kiln emu: __shfl_up_sync is not emulated",
    "syncwarp": "kiln emu: __syncwarp is not emulated",
    "atomicCAS": "kiln emu: atomicCAS is not emulated",
    "threadfence_block": "kiln emu: __threadfence_block is not emulated",
    "syncthreads_count": "kiln emu: __syncthreads_count is not emulated",
    "clock64": "kiln emu: clock64 is not emulated",
    "dsmem": "kiln emu: __cluster_map_shared_rank is not emulated",
    "asm": "kiln_emu_error_inline_asm_is_not_emulated",
    "raw_shared": "kiln_emu_error_raw___shared___is_not_emulated_use_KILN_SHARED_ARRAY",
    "shared_pointer": "a raw pointer into shared memory escapes the checks",
    "kept_proxy": "element proxy kept in a variable (`auto x = s[i]`)",
}


def compile_case(cmd, case):
    args = cmd + ([f"-DCASE_{case}"] if case else [])
    r = subprocess.run(args, capture_output=True, text=True)
    return case, r.returncode, r.stderr


def main():
    sep = sys.argv.index("--")
    source, includes = sys.argv[1], sys.argv[2:sep]
    compiler = sys.argv[sep + 1:]
    cmd = compiler + ["-std=c++20", "-fsyntax-only"] + [f"-I{d}" for d in includes] + [source]
    failures = []
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda c: compile_case(cmd, c), [None] + list(CASES)))
    for case, rc, err in results:
        if case is None:
            if rc != 0:
                failures.append(f"the control (no case) does not compile:\n{err}")
        elif rc == 0:
            failures.append(f"{case}: compiled, but must be rejected")
        elif CASES[case] not in err:
            failures.append(f"{case}: rejected without naming it ({CASES[case]!r}):\n{err[:2000]}")
        else:
            print(f"{case}: rejected: {CASES[case]}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
